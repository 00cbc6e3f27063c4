// The error answers of the emulated API. BFL's API is FastAPI, whose errors are `{"detail": ...}`:
// a string for HTTP errors, the list of pydantic problems for a 422. The texts of the 403s are
// the ones users report from api.bfl.ai; the 402 and 429 texts are not published and are the
// emulator's own (docs/emulators/bfl.md), so a client must go by the status, never the text.
//
// Injected 5xx answers are not JSON, as a proxy or an unhandled exception in front of an ASGI
// app answers: a client must not need a JSON body to retry a 5xx.
import type { ValidationIssue } from './validation.js';

export type BflErrorCode =
  | 'missing_key'
  | 'invalid_key'
  | 'insufficient_credits'
  | 'too_many_active_tasks'
  | 'not_found'
  | 'method_not_allowed'
  | 'validation';

/** Thrown by route handlers; the server turns it into the answer. */
export class BflApiError extends Error {
  override name = 'BflApiError';

  constructor(
    readonly code: BflErrorCode,
    readonly status: number,
    readonly body: { detail: string | ValidationIssue[] },
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.detail === 'string' ? body.detail : 'validation error');
  }
}

export const missingKey = (): BflApiError =>
  new BflApiError('missing_key', 403, { detail: 'Not authenticated' });

export const invalidKey = (): BflApiError =>
  new BflApiError('invalid_key', 403, { detail: 'Not authenticated - Invalid Authentication' });

export const insufficientCredits = (): BflApiError =>
  new BflApiError('insufficient_credits', 402, {
    detail: 'Insufficient credits. Add credits to your account to continue using the API.',
  });

export function tooManyActiveTasks(limit: number, retryAfterSeconds: number | null): BflApiError {
  const headers: Record<string, string> =
    retryAfterSeconds === null ? {} : { 'retry-after': String(retryAfterSeconds) };
  return new BflApiError(
    'too_many_active_tasks',
    429,
    { detail: `You have reached the limit of ${limit} active tasks. Wait for one of your tasks to finish.` },
    headers,
  );
}

export const routeNotFound = (): BflApiError => new BflApiError('not_found', 404, { detail: 'Not Found' });

export const methodNotAllowed = (allow: string): BflApiError =>
  new BflApiError('method_not_allowed', 405, { detail: 'Method Not Allowed' }, { allow });

export const validationError = (issues: ValidationIssue[]): BflApiError =>
  new BflApiError('validation', 422, { detail: issues });

/** An injected server fault: status, content type and body as a proxy or server would send them. */
export interface ServerFault {
  status: 500 | 502 | 503;
  contentType: string;
  body: string;
}

export const SERVER_FAULTS: readonly ServerFault[] = [
  { status: 500, contentType: 'text/plain; charset=utf-8', body: 'Internal Server Error' },
  {
    status: 502,
    contentType: 'text/html',
    body: '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n',
  },
  {
    status: 503,
    contentType: 'text/html',
    body: '<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n</body>\r\n</html>\r\n',
  },
];
