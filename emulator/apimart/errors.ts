// Every error the emulator can give: its HTTP status, error.type, error.code and (for parameter
// errors) error.param, plus the two task-level failures carried in data.error. The spec leaves
// the type/code values open ("not shown"); these are the emulator's documented choice
// (docs/emulator.md), and the message texts live in i18n.ts.
import type { ErrorEnvelope, Language, TaskError } from './wire.js';
import { renderMessage, type MessageVars } from './i18n.js';
import { PixelmillError } from '../../common/errors.js';

interface ErrorDef {
  readonly status: number;
  readonly type: string;
  /** The request field the error is about; absent for errors not about one field. */
  readonly param?: string;
}

const badRequest = (param?: string): ErrorDef => ({
  status: 400,
  type: 'invalid_request_error',
  ...(param ? { param } : {}),
});
const auth: ErrorDef = { status: 401, type: 'authentication_error' };
const notFound: ErrorDef = { status: 404, type: 'not_found_error' };

export const API_ERRORS = {
  invalid_json: badRequest(),
  invalid_body: badRequest(),
  body_too_large: badRequest(),
  missing_prompt: badRequest('prompt'),
  invalid_prompt: badRequest('prompt'),
  empty_prompt: badRequest('prompt'),
  invalid_model: badRequest('model'),
  invalid_size: badRequest('size'),
  invalid_resolution: badRequest('resolution'),
  invalid_n: badRequest('n'),
  invalid_image_urls: badRequest('image_urls'),
  too_many_image_urls: badRequest('image_urls'),
  // A reference image fetched at submit (docs/emulator.md, "Reference images").
  image_url_unreachable: badRequest('image_urls'),
  image_url_not_image: badRequest('image_urls'),
  image_url_too_large: badRequest('image_urls'),
  invalid_webhook: badRequest('webhook'),
  invalid_language: badRequest('language'),
  invalid_task_ids: badRequest('task_ids'),
  empty_task_ids: badRequest('task_ids'),
  too_many_task_ids: badRequest('task_ids'),
  // PUT /_emulator/rate-limits only (not part of the API).
  invalid_rate_limits: badRequest(),
  missing_api_key: auth,
  invalid_api_key: auth,
  api_key_disabled: auth,
  api_key_expired: auth,
  // The Idempotency-Key header (docs/emulator.md, "Idempotency keys").
  invalid_idempotency_key: badRequest(),
  idempotency_key_reused: { status: 409, type: 'idempotency_error' },
  insufficient_credits: { status: 402, type: 'billing_error' },
  task_forbidden: { status: 403, type: 'permission_error' },
  task_not_found: notFound,
  task_expired: notFound,
  route_not_found: notFound,
  image_not_found: notFound,
  image_expired: notFound,
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'server_error' },
  bad_gateway: { status: 502, type: 'server_error' },
  service_unavailable: { status: 503, type: 'server_error' },
  // The hosted service's answer to a request it cannot build (e.g. a size it does not support).
  build_request_failed: { status: 500, type: 'server_error' },
} as const satisfies Record<string, ErrorDef>;

export type ApiErrorCode = keyof typeof API_ERRORS;

/** Task-level failures (HTTP 200, data.status failed, data.error). */
export const TASK_ERRORS = {
  generation_failed: { type: 'generation_error' },
  content_blocked: { type: 'content_policy_violation', param: 'prompt' },
} as const satisfies Record<string, { type: string; param?: string }>;

export type TaskErrorCode = keyof typeof TASK_ERRORS;

/** The injected server faults, drawn uniformly. */
export const SERVER_FAULT_CODES = [
  'internal_error',
  'bad_gateway',
  'service_unavailable',
] as const satisfies readonly ApiErrorCode[];

/** The error envelope of a request-level failure. */
export function errorEnvelope(code: ApiErrorCode, language: Language, vars?: MessageVars): ErrorEnvelope {
  const def: ErrorDef = API_ERRORS[code];
  const error: ErrorEnvelope['error'] = {
    message: renderMessage(code, language, vars),
    type: def.type,
    code,
  };
  if (def.param) error.param = def.param;
  return { error };
}

export function errorStatus(code: ApiErrorCode): number {
  return API_ERRORS[code].status;
}

/** data.error of a failed task (spec 2.5). */
export function taskError(code: TaskErrorCode, language: Language): TaskError {
  const def: { type: string; param?: string } = TASK_ERRORS[code];
  return {
    message: renderMessage(code, language),
    type: def.type,
    ...(def.param ? { param: def.param } : {}),
    code,
  };
}

/**
 * A request-level failure raised inside a route handler; the server turns it into the envelope.
 * Retryable as its status is: a 429 or a 5xx.
 */
export class EmulatorApiError extends PixelmillError {
  override name = 'EmulatorApiError';
  readonly code: ApiErrorCode;
  readonly retryable: boolean;
  readonly vars: MessageVars | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ApiErrorCode, vars?: MessageVars, headers?: Record<string, string>) {
    super(code);
    this.code = code;
    const status = errorStatus(code);
    this.retryable = status === 429 || status >= 500;
    this.vars = vars;
    this.headers = headers;
  }
}
