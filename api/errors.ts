// The one error hierarchy of the image API client. Every failure the client reports is an
// `ImageApiError` whose `retryable` flag is the single source of truth for retry decisions
// (Temporal owns the retries; nothing in api/ retries by itself).
//
// `name` is set explicitly on every class because Temporal matches `nonRetryableErrorTypes`
// by name, and bundlers or refactors must not be able to change it. `code` is stable and
// machine-readable (lower-case, `api_` prefix, distinct from the server's own `apiCode`).
// Messages are one line and never contain the API key, request headers or request bodies.
import { errorSummary, PixelmillError, type FailureDetails } from '../common/errors.js';

export interface ImageApiErrorDetails {
  /** The endpoint as a template, e.g. `GET /v1/tasks/{id}` or `GET {result_url}`. */
  endpoint: string;
  httpStatus?: number;
  /** `error.type` of the service's error envelope. */
  apiType?: string;
  /** `error.code` of the service's error envelope, e.g. `task_expired`. */
  apiCode?: string;
  /** How long the server asked us to wait (Retry-After), in milliseconds. */
  retryAfterMs?: number;
  /**
   * True when the request may have reached the server and been acted on although no usable
   * answer came back (a timeout waiting for the answer, a reset after sending, a garbled 2xx).
   * Matters for submit, which is not idempotent: a retry may create (and bill) a second task.
   */
  outcomeUnknown?: boolean;
  cause?: unknown;
}

export class ImageApiError extends PixelmillError {
  override name = 'ImageApiError';
  readonly code: string;
  readonly retryable: boolean;
  readonly endpoint: string;
  readonly httpStatus?: number;
  readonly apiType?: string;
  readonly apiCode?: string;
  readonly retryAfterMs?: number;
  readonly outcomeUnknown: boolean;

  constructor(code: string, retryable: boolean, message: string, details: ImageApiErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.retryable = retryable;
    this.endpoint = details.endpoint;
    this.outcomeUnknown = details.outcomeUnknown ?? false;
    // Absent optional fields stay absent so that summaries and logs do not fill with `undefined`.
    if (details.httpStatus !== undefined) this.httpStatus = details.httpStatus;
    if (details.apiType !== undefined) this.apiType = details.apiType;
    if (details.apiCode !== undefined) this.apiCode = details.apiCode;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
  }
}

/** 400: a parameter was rejected by the service. */
export class BadRequestError extends ImageApiError {
  override name = 'BadRequestError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_bad_request', false, message, details);
  }
}

/** Rejected by the client before anything was sent (e.g. a batch of 0 or 501 ids). */
export class InvalidRequestError extends ImageApiError {
  override name = 'InvalidRequestError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_invalid_request', false, message, details);
  }
}

/** 401: the API key is missing, invalid, disabled or expired. */
export class AuthenticationError extends ImageApiError {
  override name = 'AuthenticationError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_authentication_failed', false, message, details);
  }
}

/** 402: the account has too few credits. */
export class InsufficientCreditsError extends ImageApiError {
  override name = 'InsufficientCreditsError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_insufficient_credits', false, message, details);
  }
}

/** 403: e.g. another account's task. */
export class PermissionDeniedError extends ImageApiError {
  override name = 'PermissionDeniedError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_permission_denied', false, message, details);
  }
}

/** 404: the task does not exist or has expired; `apiCode` tells which (e.g. `task_expired`). */
export class NotFoundError extends ImageApiError {
  override name = 'NotFoundError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_not_found', false, message, details);
  }
}

/** 429: retry after `retryAfterMs` when the server said so. */
export class RateLimitError extends ImageApiError {
  override name = 'RateLimitError';
  /**
   * What the provider ran out of: calls per second (a rate), or tasks running at once (a
   * concurrency, as BFL's 429 over its active-task limit says). The governor learns each its way.
   */
  readonly limit: 'rate' | 'concurrency';
  constructor(message: string, details: ImageApiErrorDetails & { limit?: 'rate' | 'concurrency' }) {
    super('api_rate_limited', true, message, details);
    this.limit = details.limit ?? 'rate';
  }
}

/** 5xx. */
export class ServerError extends ImageApiError {
  override name = 'ServerError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_server_error', true, message, details);
  }
}

/** Connection refused or reset, DNS failure, socket closed mid-answer. */
export class NetworkError extends ImageApiError {
  override name = 'NetworkError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_network_error', true, message, details);
  }
}

/** Connecting, waiting for the answer's headers or for its body took too long (or HTTP 408). */
export class TimeoutError extends ImageApiError {
  override name = 'TimeoutError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_timeout', true, message, details);
  }
}

/**
 * A 2xx answer that is not valid JSON or does not match the schema. Retryable: truncated or
 * garbled answers are usually transient (a proxy, a deploy), and queries are idempotent.
 */
export class InvalidResponseError extends ImageApiError {
  override name = 'InvalidResponseError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_invalid_response', true, message, details);
  }
}

export type ResultDownloadErrorCode =
  | 'api_result_http_error'
  | 'api_result_network_error'
  | 'api_result_timeout'
  | 'api_result_truncated'
  | 'api_result_bad_url';

/** Fetching a result image failed; `code` says how. */
export class ResultDownloadError extends ImageApiError {
  override name = 'ResultDownloadError';
  constructor(
    code: ResultDownloadErrorCode | 'api_result_expired',
    retryable: boolean,
    message: string,
    details: ImageApiErrorDetails,
  ) {
    super(code, retryable, message, details);
  }
}

/** 404/410 from the result host: the URL expired (24 h after completion); retrying cannot help. */
export class ResultExpiredError extends ResultDownloadError {
  override name = 'ResultExpiredError';
  constructor(message: string, details: ImageApiErrorDetails) {
    super('api_result_expired', false, message, details);
  }
}

export function isImageApiError(error: unknown): error is ImageApiError {
  return error instanceof ImageApiError;
}

/**
 * Describes any thrown value. Errors from outside the client are reported as retryable,
 * as Temporal would treat an unclassified failure; its retry policy bounds the attempts.
 */
export function toFailureDetails(error: unknown): FailureDetails {
  if (error instanceof ImageApiError) {
    const details: FailureDetails = { ...errorSummary(error), retryable: error.retryable };
    if (error.retryAfterMs !== undefined) details.retryAfterMs = error.retryAfterMs;
    return details;
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      type: error.name,
      code: typeof code === 'string' ? code : 'unexpected_error',
      message: error.message,
      retryable: true,
    };
  }
  return { type: 'Error', code: 'unexpected_error', message: String(error), retryable: true };
}
