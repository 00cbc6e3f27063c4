// Where an S3 output lives: `s3://bucket/prefix` parsed into a bucket and a key prefix, plus the
// connection settings a manifest may carry (endpoint, region, path-style addressing). Never
// credentials: those come from the standard AWS chain only (docs/storage.md), so a location is
// safe to keep in plan files and workflow history.

export const S3_URL_SCHEME = 's3://';

/** An S3 (or S3-compatible) output location; everything here may be written to disk and logs. */
export interface S3Location {
  bucket: string;
  /** Key prefix without leading or trailing "/", or "" for the bucket's root. */
  prefix: string;
  /** e.g. `http://127.0.0.1:9000`; default: the SDK's (AWS, or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL). */
  endpoint?: string;
  region?: string;
  /** `http://host/bucket/key` instead of `http://bucket.host/key`; most S3-compatible servers need it. */
  forcePathStyle?: boolean;
}

// The rules S3 gives for new buckets (3-63 characters, lower case, digits, "." and "-").
const BUCKET_PATTERN = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function isS3Url(value: string): boolean {
  return value.slice(0, S3_URL_SCHEME.length).toLowerCase() === S3_URL_SCHEME;
}

/** Why a store-relative key part is unusable, or undefined when it is fine. */
export function keyProblem(path: string): string | undefined {
  if (path.startsWith('/')) return 'must not start with "/"';
  if (path.includes('\\')) return 'must not contain "\\"';
  const segments = path.split('/');
  if (segments.some((segment) => segment === '')) return 'must not contain empty segments ("//")';
  if (segments.some((segment) => segment === '.' || segment === '..')) {
    return 'must not contain "." or ".." segments';
  }
  return undefined;
}

/** `s3://bucket/prefix/` as `{bucket, prefix}`, or the problems with it (one line each). */
export function parseS3Url(url: string): { bucket: string; prefix: string } | { problems: string[] } {
  if (!isS3Url(url)) return { problems: [`must start with ${S3_URL_SCHEME}`] };
  const rest = url.slice(S3_URL_SCHEME.length);
  const slash = rest.indexOf('/');
  const bucket = slash === -1 ? rest : rest.slice(0, slash);
  const prefix = (slash === -1 ? '' : rest.slice(slash + 1)).replace(/\/+$/, '');
  const problems: string[] = [];
  if (!BUCKET_PATTERN.test(bucket) || bucket.includes('..')) {
    problems.push(
      `bucket "${bucket}" is not a valid S3 bucket name (3-63 characters: lower-case letters, digits, "." and "-")`,
    );
  }
  const bad = prefix === '' ? undefined : keyProblem(prefix);
  if (bad !== undefined) problems.push(`the key prefix "${prefix}" ${bad}`);
  return problems.length > 0 ? { problems } : { bucket, prefix };
}

/** The location as a URL, e.g. `s3://bucket/prefix`, for messages and `ResultStore.location`. */
export function s3UrlOf(location: Pick<S3Location, 'bucket' | 'prefix'>): string {
  return `${S3_URL_SCHEME}${location.bucket}${location.prefix === '' ? '' : `/${location.prefix}`}`;
}
