// Small text objects under an S3 location: what run state (runstate/s3.ts) keeps in an object
// store. Whole-object reads and writes, listings, and a create that does nothing when the object
// exists, for records that must never be overwritten.
// Errors are the store's StorageErrors (errors.ts); the SDK retries only when the connection asks
// (the CLI's: s3-connection.ts maxAttempts), as in activities Temporal does.
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type ListObjectsV2CommandOutput,
} from '@aws-sdk/client-s3';
import { classifyS3Error, type S3CallContext } from './errors.js';
import { UnsafeStoragePathError } from './result-store.js';
import { s3ConnectionOf, type S3ConnectionOptions } from './s3-connection.js';
import { keyProblem, s3UrlOf, type S3Location } from './s3-location.js';

const statusOf = (error: unknown): number | undefined =>
  (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

/** An object as a listing shows it. */
export interface ListedObject {
  /** Relative to the location. */
  path: string;
  size: number;
  etag: string;
  modifiedMs: number;
}

export class S3Objects {
  readonly location: string;
  readonly #target: S3Location;
  readonly #client: S3Client;
  readonly #context: S3CallContext;
  /** Counted requests, for the benchmark's "object-store requests per image". */
  readonly requests = { get: 0, head: 0, put: 0, list: 0 };

  /** `label`: how messages name the location (default its URL), e.g. the output it belongs to. */
  constructor(options: S3ConnectionOptions & { location: S3Location; label?: string }) {
    const { config, where } = s3ConnectionOf(options);
    this.#target = options.location;
    this.location = options.label ?? s3UrlOf(options.location);
    this.#client = new S3Client(config);
    this.#context = { url: this.location, bucket: options.location.bucket, where };
  }

  /** The object key of a path relative to the location; refuses paths that would escape it. */
  keyOf(path: string): string {
    const problem = path === '' ? 'must not be empty' : keyProblem(path);
    if (problem !== undefined) {
      throw new UnsafeStoragePathError(`storage path "${path}" ${problem} (in ${this.location})`);
    }
    return this.#target.prefix === '' ? path : `${this.#target.prefix}/${path}`;
  }

  /** The object's text, or undefined when there is none. */
  async read(path: string): Promise<string | undefined> {
    this.requests.get++;
    try {
      const answer = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#target.bucket, Key: this.keyOf(path) }),
      );
      return (await answer.Body?.transformToString('utf8')) ?? '';
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name === 'NoSuchKey' || (statusOf(error) === 404 && name !== 'NoSuchBucket')) return undefined;
      throw classifyS3Error(error, this.#context, false);
    }
  }

  /**
   * Writes the object whole. `ifAbsent`: only when no object is there; then false when one was.
   * Asked first (not every S3-compatible store honours `If-None-Match`; rclone ignores it), then
   * written with the condition, so a store that honours it closes the moment between the two.
   */
  async write(
    path: string,
    text: string | Uint8Array,
    options: { ifAbsent?: boolean; contentType?: string } = {},
  ): Promise<boolean> {
    const conditional = options.ifAbsent === true;
    if (conditional && (await this.exists(path))) return false;
    this.requests.put++;
    try {
      await this.#client.send(
        new PutObjectCommand({
          Bucket: this.#target.bucket,
          Key: this.keyOf(path),
          Body: text,
          ContentType: options.contentType ?? 'application/json',
          ...(conditional ? { IfNoneMatch: '*' } : {}),
        }),
      );
      return true;
    } catch (error) {
      const status = statusOf(error);
      if (conditional && (status === 412 || status === 409)) return false;
      throw classifyS3Error(error, this.#context, true);
    }
  }

  /**
   * A URL that lets its holder GET the object at `path` without credentials, for `expiresInS`
   * seconds from `signingDate`: the same date gives the same URL.
   */
  presignedGetUrl(path: string, options: { expiresInS: number; signingDate: Date }): Promise<string> {
    const command = new GetObjectCommand({ Bucket: this.#target.bucket, Key: this.keyOf(path) });
    return getSignedUrl(this.#client, command, {
      expiresIn: options.expiresInS,
      signingDate: options.signingDate,
    });
  }

  /** Whether an object is at `path`. */
  async exists(path: string): Promise<boolean> {
    this.requests.head++;
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#target.bucket, Key: this.keyOf(path) }));
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw classifyS3Error(error, this.#context, false);
    }
  }

  /** The paths (relative to the location) of every object whose path starts with `prefix`, sorted. */
  async list(prefix: string): Promise<string[]> {
    return [...(await this.listSizes(prefix)).keys()].sort();
  }

  /** Every object under `prefix` (relative to the location) with its size in bytes. */
  async listSizes(prefix: string): Promise<Map<string, number>> {
    return new Map((await this.listEntries(prefix)).map((entry) => [entry.path, entry.size]));
  }

  /** Every object under `prefix` (relative to the location), in key order. */
  async listEntries(prefix: string): Promise<ListedObject[]> {
    const base = this.#target.prefix === '' ? '' : `${this.#target.prefix}/`;
    const entries: ListedObject[] = [];
    let token: string | undefined;
    do {
      this.requests.list++;
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.#client.send(
          new ListObjectsV2Command({
            Bucket: this.#target.bucket,
            Prefix: `${base}${prefix}`,
            ...(token ? { ContinuationToken: token } : {}),
          }),
        );
      } catch (error) {
        throw classifyS3Error(error, this.#context, true);
      }
      for (const object of page.Contents ?? []) {
        if (object.Key)
          entries.push({
            path: object.Key.slice(base.length),
            size: object.Size ?? 0,
            etag: object.ETag ?? '',
            modifiedMs: object.LastModified?.getTime() ?? 0,
          });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return entries;
  }

  close(): void {
    this.#client.destroy();
  }
}
