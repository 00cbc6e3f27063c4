// The S3 (and S3-compatible) ResultStore, on the AWS SDK v3. Same contract as the local store:
// `has` is true only for an object of the recorded size and sha256, and an object appears only
// complete (S3 publishes a PUT or a multipart upload atomically, on completion).
//
// An object's headers (its sha256 metadata, and S3's own ChecksumSHA256 on a single PUT) are sent
// before its body, but a download's sha256 is known only after its last byte. So `put` first
// spools the stream to a local temp file, hashing on the way, then uploads that file through
// lib-storage's Upload, part by part: memory holds a few parts (`partSize` x `queueSize`),
// never a whole image. Knowing the hash first also lets an upload be skipped when the object
// already has the same sha256 and size.
//
// Credentials come only from the standard AWS chain (environment, AWS_PROFILE, SSO, container or
// instance roles), never from the manifest. The SDK does not retry (maxAttempts 1): Temporal
// owns retries, and StorageError says which failures are worth one.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectsCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type HeadObjectCommandOutput,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { contentTypeFor } from './content-types.js';
import { classifyS3Error, type S3CallContext, type StorageError } from './errors.js';
import { sha256OfFile, writeHashed } from './files.js';
import {
  UnsafeStoragePathError,
  type ResultStore,
  type StoredAttributes,
  type StoredImage,
} from './result-store.js';
import { s3ConnectionOf, type S3ConnectionOptions } from './s3-connection.js';
import { keyProblem, s3UrlOf, type S3Location } from './s3-location.js';

/**
 * S3's smallest part. Memory per upload is about partSize x (queueSize + 2): larger parts mean
 * fewer requests and more memory, and images are rarely more than a few parts.
 */
export const DEFAULT_PART_SIZE = 5 * 1024 * 1024;
/** S3 deletes at most this many keys per request. */
const MAX_KEYS_PER_DELETE = 1000;
export const DEFAULT_QUEUE_SIZE = 2;
/** Object metadata key (x-amz-meta-sha256) holding the hex sha256 of the whole object. */
export const SHA256_METADATA_KEY = 'sha256';
/** Refusals whose reason is already known; any other 403 on a HEAD is probed for its reason. */
const EXPLAINED_REFUSALS = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'AccessDenied',
]);

export interface S3ResultStoreOptions extends S3ConnectionOptions {
  location: S3Location;
  /** Where downloads are spooled before upload; default the OS temp directory. */
  spoolDir?: string;
  partSize?: number;
  queueSize?: number;
}

/** What the store did, for tests and logs. */
export interface S3StoreCounts {
  uploaded: number;
  skipped: number;
}

/** The object's sha256 (hex), from our metadata or S3's whole-object ChecksumSHA256. */
function recordedSha256(head: HeadObjectCommandOutput): string | undefined {
  const fromMetadata = head.Metadata?.[SHA256_METADATA_KEY];
  if (fromMetadata !== undefined && /^[0-9a-f]{64}$/.test(fromMetadata)) return fromMetadata;
  // A multipart object's checksum is a checksum of part checksums ("...=-3"): not comparable.
  const checksum = head.ChecksumSHA256;
  if (checksum !== undefined && /^[A-Za-z0-9+/]{43}=$/.test(checksum)) {
    return Buffer.from(checksum, 'base64').toString('hex');
  }
  return undefined;
}

function isSame(head: HeadObjectCommandOutput | undefined, expected: StoredImage): boolean {
  return (
    head !== undefined && head.ContentLength === expected.bytes && recordedSha256(head) === expected.sha256
  );
}

/** Attribute names and values as S3 metadata allows them: lower-case names, ASCII values. */
function metadataOf(attributes: StoredAttributes | undefined, sha256: string): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes ?? {})) {
    const key = name.toLowerCase().replace(/[^a-z0-9-]/g, '-');
    metadata[key] = /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
  }
  metadata[SHA256_METADATA_KEY] = sha256;
  return metadata;
}

export class S3ResultStore implements ResultStore {
  readonly location: string;
  readonly counts: S3StoreCounts = { uploaded: 0, skipped: 0 };
  readonly #target: S3Location;
  readonly #client: S3Client;
  readonly #context: S3CallContext;
  readonly #spoolDir: string;
  readonly #partSize: number;
  readonly #queueSize: number;

  constructor(options: S3ResultStoreOptions) {
    const { config, where } = s3ConnectionOf(options);
    this.#target = options.location;
    this.location = s3UrlOf(options.location);
    this.#client = new S3Client(config);
    this.#context = { url: this.location, bucket: options.location.bucket, where };
    this.#spoolDir = options.spoolDir ?? tmpdir();
    this.#partSize = options.partSize ?? DEFAULT_PART_SIZE;
    this.#queueSize = options.queueSize ?? DEFAULT_QUEUE_SIZE;
  }

  /** The object key of a store-relative path; refuses paths that would escape the prefix. */
  keyOf(path: string): string {
    const problem = path === '' ? 'must not be empty' : keyProblem(path);
    if (problem !== undefined) {
      throw new UnsafeStoragePathError(`storage path "${path}" ${problem} (in ${this.location})`);
    }
    return this.#target.prefix === '' ? path : `${this.#target.prefix}/${path}`;
  }

  /** Checks that the bucket exists and the credentials are accepted; throws a StorageError. */
  async check(): Promise<void> {
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#target.bucket }));
    } catch (error) {
      throw await this.#explained(error, true);
    }
  }

  async has(path: string, expected: StoredImage): Promise<boolean> {
    return isSame(await this.#head(this.keyOf(path)), expected);
  }

  async put(
    path: string,
    body: Readable,
    attributes?: StoredAttributes,
    withFile?: (file: string) => Promise<void>,
  ): Promise<StoredImage> {
    // As in the local store: an error of the body before the pipeline is attached is kept.
    let early: unknown;
    const keep = (error: unknown): void => void (early ??= error);
    body.on('error', keep);
    const spool = join(this.#spoolDir, `.pixelmill-s3-${randomBytes(8).toString('hex')}.spool`);
    try {
      const key = this.keyOf(path);
      const stored = await writeHashed(body, spool, { mode: 0o600 });
      const uploaded = await this.#upload(key, path, spool, stored, attributes);
      await withFile?.(spool);
      return uploaded;
    } catch (error) {
      body.destroy();
      throw early ?? error;
    } finally {
      body.off('error', keep);
      await rm(spool, { force: true });
    }
  }

  async putFile(path: string, file: string, attributes?: StoredAttributes): Promise<StoredImage> {
    const key = this.keyOf(path);
    const stored: StoredImage = { sha256: await sha256OfFile(file), bytes: (await stat(file)).size };
    return this.#upload(key, path, file, stored, attributes);
  }

  async copy(from: string, to: string, image: StoredImage): Promise<StoredImage> {
    const key = this.keyOf(to);
    if (isSame(await this.#head(key), image)) return image;
    const source = `${this.#target.bucket}/${this.keyOf(from)}`;
    try {
      // The object's metadata (its sha256 among it) is copied with it.
      await this.#client.send(
        new CopyObjectCommand({
          Bucket: this.#target.bucket,
          Key: key,
          CopySource: source.split('/').map(encodeURIComponent).join('/'),
          MetadataDirective: 'COPY',
        }),
      );
    } catch (error) {
      throw await this.#explained(error, false);
    }
    return image;
  }

  async remove(paths: readonly string[]): Promise<void> {
    for (let start = 0; start < paths.length; start += MAX_KEYS_PER_DELETE) {
      const keys = paths.slice(start, start + MAX_KEYS_PER_DELETE).map((path) => ({ Key: this.keyOf(path) }));
      try {
        await this.#client.send(
          new DeleteObjectsCommand({ Bucket: this.#target.bucket, Delete: { Objects: keys, Quiet: true } }),
        );
      } catch (error) {
        throw await this.#explained(error, false);
      }
    }
  }

  /** Releases the client's connections. */
  close(): void {
    this.#client.destroy();
  }

  async #head(key: string): Promise<HeadObjectCommandOutput | undefined> {
    try {
      return await this.#client.send(
        new HeadObjectCommand({ Bucket: this.#target.bucket, Key: key, ChecksumMode: 'ENABLED' }),
      );
    } catch (error) {
      // HEAD responses have no body: a missing key (or bucket) is a bare 404 "NotFound".
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404) return undefined;
      throw await this.#explained(error, false);
    }
  }

  /**
   * A HEAD answer has no body, so a refusal comes without its reason (wrong key id? wrong
   * secret? no permission?). On such a 403 one listing request, whose answer has a body, tells.
   */
  async #explained(error: unknown, bucketCall: boolean): Promise<StorageError> {
    const failed = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (failed.$metadata?.httpStatusCode === 403 && !EXPLAINED_REFUSALS.has(failed.name ?? '')) {
      try {
        await this.#client.send(
          new ListObjectsV2Command({ Bucket: this.#target.bucket, Prefix: this.#target.prefix, MaxKeys: 1 }),
        );
      } catch (probe) {
        const status = (probe as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status === 403) return classifyS3Error(probe, this.#context, bucketCall);
      }
    }
    return classifyS3Error(error, this.#context, bucketCall);
  }

  async #upload(
    key: string,
    path: string,
    file: string,
    stored: StoredImage,
    attributes: StoredAttributes | undefined,
  ): Promise<StoredImage> {
    if (isSame(await this.#head(key), stored)) {
      this.counts.skipped += 1;
      return stored;
    }
    const singlePart = stored.bytes <= this.#partSize;
    const upload = new Upload({
      client: this.#client,
      partSize: this.#partSize,
      queueSize: this.#queueSize,
      leavePartsOnError: false,
      params: {
        Bucket: this.#target.bucket,
        Key: key,
        Body: createReadStream(file),
        ContentLength: stored.bytes,
        ContentType: contentTypeFor(path),
        Metadata: metadataOf(attributes, stored.sha256),
        // Lets S3 verify the bytes; only on a single PUT, since Upload copies its params onto
        // every part and the completion of a multipart upload.
        ...(singlePart ? { ChecksumSHA256: Buffer.from(stored.sha256, 'hex').toString('base64') } : {}),
      },
    });
    try {
      await upload.done();
    } catch (error) {
      throw classifyS3Error(error, this.#context, true);
    }
    this.counts.uploaded += 1;
    return stored;
  }
}
