// Turns what came back from the wire (an HTTP status with its body, or a transport failure
// thrown by undici) into the typed errors of errors.ts. This is the only place where HTTP
// failures are classified as retryable or not.
import { readErrorBody } from './error-body.js';
import {
  AuthenticationError,
  BadRequestError,
  ImageApiError,
  InsufficientCreditsError,
  InvalidRequestError,
  NetworkError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  TimeoutError,
  type ImageApiErrorDetails,
} from './errors.js';

/** What error messages may say about the request that failed. */
export interface RequestContext {
  /** Template for grouping and for `error.endpoint`, e.g. `GET /v1/tasks/{id}`. */
  endpoint: string;
  /** Concrete method and path for messages, e.g. `GET /v1/tasks/task_1` (no host, no query). */
  target: string;
  /** Removes secrets from any text that reaches a message (servers sometimes echo keys). */
  redact: (text: string) => string;
  now: () => number;
}

const EXCERPT_CHARS = 200;

/** One printable line of at most ~200 characters, with secrets removed. */
export function excerpt(text: string, redact: (text: string) => string): string {
  const line = redact(text)
    .replace(/[\s\u0000-\u001f\u007f]+/g, ' ')
    .trim();
  return line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS)}…` : line;
}

/** Retry-After is either delta-seconds or an HTTP-date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // All three HTTP-date forms start with a day name; Date.parse alone would accept "-4" as a year.
  const date = /^[A-Za-z]{3}/.test(text) ? Date.parse(text) : NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

type Headers = Record<string, string | string[] | undefined>;

/** Classifies a non-2xx answer of the API (not of the result host). */
export function errorFromStatus(
  ctx: RequestContext,
  status: number,
  headers: Headers,
  body: string,
): ImageApiError {
  const envelope = readErrorBody(body);
  const details: ImageApiErrorDetails = { endpoint: ctx.endpoint, httpStatus: status };
  if (envelope?.apiType !== undefined) details.apiType = excerpt(envelope.apiType, ctx.redact);
  if (envelope?.apiCode !== undefined) details.apiCode = excerpt(envelope.apiCode, ctx.redact);
  const retryAfterMs = parseRetryAfter(headers['retry-after'], ctx.now());
  if (retryAfterMs !== undefined) details.retryAfterMs = retryAfterMs;

  const label = details.apiCode === undefined ? `${status}` : `${status} ${details.apiCode}`;
  const what = envelope?.apiMessage ?? (envelope === undefined ? body : '');
  const said = excerpt(what, ctx.redact);
  const message = `${ctx.target} failed with ${label}${said === '' ? '' : `: ${said}`}`;

  switch (status) {
    case 400:
      return new BadRequestError(message, details);
    case 401:
      return new AuthenticationError(message, details);
    case 402:
      return new InsufficientCreditsError(message, details);
    case 403:
      return new PermissionDeniedError(message, details);
    case 404:
      return new NotFoundError(message, details);
    case 408:
      return new TimeoutError(message, { ...details, outcomeUnknown: true });
    case 429:
      return new RateLimitError(message, details);
  }
  if (status >= 500) return new ServerError(message, { ...details, outcomeUnknown: true });
  return new ImageApiError('api_unexpected_status', false, message, details);
}

// Failures that happen before a request can reach the server: a retry cannot duplicate it.
const BEFORE_SEND_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** The error code undici or Node put on a transport failure, if any. */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  // Happy-eyeballs connects report an AggregateError holding one error per address tried.
  const inner = (error as { errors?: unknown } | null)?.errors;
  return Array.isArray(inner) && inner.length > 0 ? codeOf(inner[0]) : undefined;
}

/** Classifies an error thrown by undici while sending or receiving. */
export function errorFromTransport(ctx: RequestContext, error: unknown): ImageApiError {
  const code = codeOf(error) ?? 'unknown';
  const cause = error instanceof Error ? excerpt(error.message, ctx.redact) : '';
  const because = cause === '' || cause === code ? code : `${code} (${cause})`;
  const details = { endpoint: ctx.endpoint, cause: error };
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new TimeoutError(`${ctx.target} failed: connect timed out`, details);
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new TimeoutError(`${ctx.target} failed: no response headers in time`, {
        ...details,
        outcomeUnknown: true,
      });
    case 'UND_ERR_BODY_TIMEOUT':
      return new TimeoutError(`${ctx.target} failed: response body stalled`, {
        ...details,
        outcomeUnknown: true,
      });
    case 'UND_ERR_DESTROYED':
    case 'UND_ERR_CLOSED':
      return new ImageApiError('api_client_closed', false, `${ctx.target} failed: client is closed`, details);
    case 'UND_ERR_INVALID_ARG':
      return new InvalidRequestError(`${ctx.target} failed: ${because}`, details);
  }
  return new NetworkError(`${ctx.target} failed: network error ${because}`, {
    ...details,
    outcomeUnknown: !BEFORE_SEND_CODES.has(code),
  });
}
