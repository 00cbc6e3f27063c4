// What goes wrong with an object store, classified once, here: each error has a stable `name`
// (the Temporal failure type), a `code` and whether a retry may help. A missing bucket or
// refused credentials will not heal by retrying; a 5xx, a throttle or a dropped connection may.
// Messages are one line, start with the `s3://` location and never carry credentials.
import { PixelmillError } from '../common/errors.js';

export abstract class StorageError extends PixelmillError {}

export class StorageBucketMissingError extends StorageError {
  override name = 'StorageBucketMissingError';
  readonly code = 'storage_bucket_missing';
  readonly retryable = false;
}

export class StorageAccessDeniedError extends StorageError {
  override name = 'StorageAccessDeniedError';
  readonly code = 'storage_access_denied';
  readonly retryable = false;
}

export class StorageCredentialsMissingError extends StorageError {
  override name = 'StorageCredentialsMissingError';
  readonly code = 'storage_credentials_missing';
  readonly retryable = false;
}

/** The store answered 5xx or throttled, or could not be reached: worth another attempt. */
export class StorageUnavailableError extends StorageError {
  override name = 'StorageUnavailableError';
  readonly code = 'storage_unavailable';
  readonly retryable = true;
}

/** Any other refusal (a 4xx the store gave a reason for). */
export class StorageRequestError extends StorageError {
  override name = 'StorageRequestError';
  readonly code = 'storage_request_failed';
  readonly retryable = false;
}

/**
 * A path the file system refuses for this one file: a name too long, bytes it cannot store, a
 * file where a folder must be. Other files of the run are not affected, and a retry cannot help.
 */
export class StoragePathError extends StorageError {
  override name = 'StoragePathError';
  readonly code = 'storage_path_invalid';
  readonly retryable = false;
}

/** What a file system error means, in words a user can act on. */
const ERRNO_REASONS: Readonly<Record<string, string>> = {
  ENAMETOOLONG: 'a name in it is too long',
  EILSEQ: 'it has bytes the file system cannot store',
  EINVAL: 'the file system does not accept it',
  ENOTDIR: 'a file stands where a folder must be',
  EISDIR: 'a folder stands where the file must be',
  EEXIST: 'a file stands where a folder must be',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
};

/** The reason for a file system error, or its own first line when it has no known code. */
export function fileErrorReason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return (code !== undefined && ERRNO_REASONS[code]) || (String(message).split('\n')[0] ?? String(code));
}

/** errno codes that are about one path, not the store as a whole (a full disk, a read-only mount). */
const PATH_ERRNOS = new Set(['ENAMETOOLONG', 'EILSEQ', 'EINVAL', 'ENOTDIR', 'EISDIR', 'EEXIST']);

/** A StoragePathError for a file system error that concerns `path` alone; anything else unchanged. */
export function classifyFileError(error: unknown, path: string): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === undefined || !PATH_ERRNOS.has(code)) return error;
  return new StoragePathError(`cannot write ${path}: ${fileErrorReason(error)} (${code})`);
}

export function isStorageError(error: unknown): error is StorageError {
  return error instanceof StorageError;
}

/** What a failed S3 call is about, for the message. */
export interface S3CallContext {
  /** `s3://bucket/prefix` */
  url: string;
  bucket: string;
  /** Where the store is, e.g. `http://127.0.0.1:9000` or `AWS S3 (eu-west-1)`. */
  where: string;
}

const ACCESS_ERRORS = new Set([
  'AccessDenied',
  'Forbidden',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidToken',
  'ExpiredToken',
  'TokenRefreshRequired',
]);
const THROTTLE_ERRORS = new Set(['SlowDown', 'Throttling', 'ThrottlingException', 'RequestTimeout']);
const CREDENTIAL_HINT = 'check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE';

interface SdkErrorShape {
  name?: string;
  message?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

function firstLine(text: string | undefined): string {
  const line = (text ?? '').split('\n')[0]?.trim() ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}...` : line;
}

function accessMessage(name: string, ctx: S3CallContext): string {
  if (name === 'InvalidAccessKeyId') {
    return `${ctx.url}: the access key id is not known at ${ctx.where} (${CREDENTIAL_HINT})`;
  }
  if (name === 'SignatureDoesNotMatch') {
    return `${ctx.url}: the secret access key does not match the access key id at ${ctx.where} (${CREDENTIAL_HINT})`;
  }
  if (name === 'ExpiredToken' || name === 'TokenRefreshRequired') {
    return `${ctx.url}: the AWS session token has expired (${CREDENTIAL_HINT})`;
  }
  return `${ctx.url}: access to bucket "${ctx.bucket}" denied at ${ctx.where} (${CREDENTIAL_HINT}, and the bucket's policy)`;
}

/**
 * The StorageError for anything an S3 call threw. `bucketCall` marks calls where a 404 can only
 * mean the bucket (HeadBucket, PutObject); on HeadObject a 404 is a missing key and is not an error.
 */
export function classifyS3Error(error: unknown, ctx: S3CallContext, bucketCall: boolean): StorageError {
  if (isStorageError(error)) return error;
  const shape = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorShape;
  const name = shape.name ?? 'Error';
  const status = shape.$metadata?.httpStatusCode;
  if (name === 'CredentialsProviderError') {
    return new StorageCredentialsMissingError(
      `${ctx.url}: no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)`,
    );
  }
  if (/region is missing/i.test(shape.message ?? '')) {
    return new StorageRequestError(
      `${ctx.url}: no AWS region (set output.region in the manifest, AWS_REGION, or a region in the AWS profile)`,
    );
  }
  if (name === 'NoSuchBucket' || (bucketCall && status === 404)) {
    return new StorageBucketMissingError(`${ctx.url}: bucket "${ctx.bucket}" does not exist at ${ctx.where}`);
  }
  if (ACCESS_ERRORS.has(name) || status === 401 || status === 403) {
    return new StorageAccessDeniedError(accessMessage(name, ctx));
  }
  if (status === undefined || status >= 500 || status === 429 || THROTTLE_ERRORS.has(name)) {
    const why = status === undefined ? (shape.code ?? firstLine(shape.message)) : `HTTP ${status} ${name}`;
    return new StorageUnavailableError(`${ctx.url}: the store at ${ctx.where} is unavailable (${why})`);
  }
  return new StorageRequestError(
    `${ctx.url}: the store at ${ctx.where} refused the request (HTTP ${status} ${name}: ${firstLine(shape.message)})`,
  );
}
