// What a finished fal request came to, read the same way from the result call and from a webhook:
// a model's output is `completed` with its image URLs (or `failed` as moderated when fal's safety
// checker flagged them: their pixels are blacked out); an error answer is `failed` with pixelmill's
// failure type: a start timeout (504 with X-Fal-Request-Timeout-Type: user) is `task_timeout`,
// code `aborted`; moderation `content_policy_violation`; a cancelled request `cancelled`; anything
// else `generation_error`, its code fal's `error_type` or the model error's `type`.
//
// The result call answers with the model's own status and body, so a 5xx there is either the
// request's outcome or a gateway failing on the way to it. What tells them apart is who wrote it:
// fal's servers put X-Fal-Request-Id on what they answer about a request (fal-js reads the result's
// request id from it; fal-ai/fal's Python client reads a 502/503/504 without it as the ingress's
// and retries it). A 5xx with it is the request's outcome, whatever its body (a request error's
// `error_type`, a model error's `detail`, or neither); a 5xx without it is a gateway's, even with
// an `error_type` (a gateway may answer in the request-error shape too): a retryable
// ServerError, left to the common classification. The start timeout's 504 says itself what it is
// (X-Fal-Request-Timeout-Type: user). A 4xx is always the model's or the queue's word on the request.
import { excerpt } from '../../api/classify.js';
import type { ErrorSummary, TaskResult } from '../../common/types.js';
import { HEADERS, ModelOutputSchema } from './wire.js';

/**
 * How long fal keeps a finished request's result: 1 hour, or 6 minutes for results of 10 KB or
 * more (docs: inference API, get request result). The shorter reading is the one to beat.
 */
export const RESULT_RETENTION_MS = 6 * 60_000;

type Headers = Record<string, string | string[] | undefined>;
type Redact = (text: string) => string;
const keepText: Redact = (text) => text;

/** The failure types of pixelmill's report vocabulary that fal's answers map to. */
export const FAILURE = {
  generation: 'generation_error',
  moderation: 'content_policy_violation',
  timeout: 'task_timeout',
  cancelled: 'cancelled',
} as const;

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The error body's fields as fal writes them: `detail` (text, a list of issues, an object) and `error_type`. */
export interface ErrorFields {
  detail?: unknown;
  errorType?: string;
}

export function errorFields(body: unknown): ErrorFields | undefined {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const fields: ErrorFields = {};
  if (record.detail !== undefined && record.detail !== null) fields.detail = record.detail;
  if (typeof record.error_type === 'string' && record.error_type !== '') fields.errorType = record.error_type;
  return fields;
}

/**
 * A model's output as a task result: `completed` with its URLs, `failed` (moderation) when the
 * safety checker flagged an image, the state for a status body (asked too early); undefined for
 * anything else. `nowMs` dates `expiresAt`: fal tells no lifetime for its result URLs (its CDN's
 * is an account setting), so pixelmill vouches for them only as long as fal keeps the result.
 */
export function outputResult(output: unknown, nowMs: number): TaskResult | undefined {
  const early = stateOf(output);
  if (early !== undefined) return { status: early };
  const parsed = ModelOutputSchema.safeParse(output);
  if (!parsed.success) return undefined;
  const files = parsed.data.images ?? (parsed.data.image ? [parsed.data.image] : undefined);
  if (files === undefined) return undefined;
  const flagged = (parsed.data.has_nsfw_concepts ?? []).filter((flag) => flag === true).length;
  if (flagged > 0)
    return {
      status: 'failed',
      error: {
        type: FAILURE.moderation,
        code: 'has_nsfw_concepts',
        message: `fal's safety checker flagged ${flagged} of ${files.length} images (they come back black)`,
      },
    };
  return { status: 'completed', urls: files.map((file) => file.url), expiresAt: nowMs + RESULT_RETENTION_MS };
}

/** `pending`/`processing` for a queue status body, undefined for anything else. */
function stateOf(body: unknown): 'pending' | 'processing' | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { status, images, image } = body as Record<string, unknown>;
  if (images !== undefined || image !== undefined) return undefined;
  if (status === 'IN_QUEUE') return 'pending';
  if (status === 'IN_PROGRESS') return 'processing';
  return undefined;
}

/** What a non-2xx answer of the result call says about the request, when it says anything. */
export type ResultAnswer =
  | { kind: 'outcome'; result: TaskResult }
  | { kind: 'state'; status: 'pending' | 'processing' }
  | { kind: 'gone' };

const NOT_FINISHED = /\b(in (progress|queue)|not (yet )?(completed|finished|ready))\b/i;

/**
 * The result call's error answer read as fal writes it; undefined leaves it to the common
 * classification (auth, rate, and what a gateway answered on the way: retryable).
 */
export function resultAnswer(
  status: number,
  headers: Headers,
  body: string,
  redact: Redact = keepText,
): ResultAnswer | undefined {
  if (status === 401 || status === 403 || status === 408 || status === 429) return undefined;
  if (status === 404 || status === 410) return { kind: 'gone' };
  const fields = errorFields(body);
  if (status === 400 && typeof fields?.detail === 'string' && NOT_FINISHED.test(fields.detail))
    return { kind: 'state', status: /queue/i.test(fields.detail) ? 'pending' : 'processing' };
  if (status >= 400 && status < 500)
    return { kind: 'outcome', result: failed(status, headers, fields, redact) };
  if (status >= 500 && isFalOwnAnswer(status, headers))
    return { kind: 'outcome', result: failed(status, headers, fields, redact) };
  return undefined;
}

/** A 5xx that fal's servers wrote about the request (see the header comment), not a gateway's. */
function isFalOwnAnswer(status: number, headers: Headers): boolean {
  return isStartTimeout(status, headers) || header(headers, HEADERS.requestId) !== undefined;
}

function isStartTimeout(status: number, headers: Headers): boolean {
  return status === 504 && header(headers, HEADERS.requestTimeoutType)?.toLowerCase() === 'user';
}

function failed(
  status: number,
  headers: Headers,
  fields: ErrorFields | undefined,
  redact: Redact,
): TaskResult {
  return { status: 'failed', error: failureOf(status, headers, fields, redact) };
}

/** A finished request's error answer (status, headers, body fields) as the report's error. */
export function failureOf(
  status: number,
  headers: Headers,
  fields: ErrorFields | undefined,
  redact: Redact = keepText,
): ErrorSummary {
  const said = excerpt(describe(fields?.detail), redact);
  const errorType = fields?.errorType ?? header(headers, HEADERS.errorType);
  if (isStartTimeout(status, headers))
    return {
      type: FAILURE.timeout,
      code: 'aborted',
      message: `fal did not start the request within its X-Fal-Request-Timeout (limits.task_timeout)${said ? `: ${said}` : ''}`,
    };
  const moderation = moderationType(fields, errorType);
  if (moderation !== undefined)
    return { type: FAILURE.moderation, code: moderation, message: said || 'fal refused the content' };
  if (errorType === 'client_cancelled' || status === 499)
    return {
      type: FAILURE.cancelled,
      code: errorType ?? 'client_cancelled',
      message: said || 'the request was cancelled',
    };
  return {
    type: FAILURE.generation,
    code: errorType ?? firstIssueType(fields?.detail) ?? `http_${status}`,
    message: said || `the model answered HTTP ${status}`,
  };
}

const MODERATION_TYPE = /content_policy|nsfw|moderat|safety/i;
const MODERATION_TEXT = /content policy|nsfw|flagged by a content checker|safety checker/i;

/** The moderation code when the answer is a refusal of the content, else undefined. */
function moderationType(fields: ErrorFields | undefined, errorType: string | undefined): string | undefined {
  if (errorType !== undefined && MODERATION_TYPE.test(errorType)) return errorType;
  const detail = fields?.detail;
  for (const issue of Array.isArray(detail) ? detail : [detail]) {
    if (typeof issue === 'string') {
      if (MODERATION_TEXT.test(issue)) return 'content_policy_violation';
      continue;
    }
    if (typeof issue !== 'object' || issue === null) continue;
    const { type, error } = issue as Record<string, unknown>;
    for (const code of [type, error]) if (typeof code === 'string' && MODERATION_TYPE.test(code)) return code;
  }
  return undefined;
}

function firstIssueType(detail: unknown): string | undefined {
  if (!Array.isArray(detail)) return undefined;
  const type = (detail[0] as Record<string, unknown> | undefined)?.type;
  return typeof type === 'string' ? type : undefined;
}

/** `detail` as one line: the text, each issue `loc: msg`, or an object's message. */
function describe(detail: unknown): string {
  if (detail === undefined || detail === null) return '';
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) return detail.map(describeIssue).filter(Boolean).join('; ');
  if (typeof detail === 'object') {
    const { message, msg } = detail as Record<string, unknown>;
    if (typeof message === 'string') return message;
    if (typeof msg === 'string') return msg;
  }
  return JSON.stringify(detail);
}

function describeIssue(issue: unknown): string {
  if (typeof issue === 'string') return issue;
  if (typeof issue !== 'object' || issue === null) return '';
  const { loc, msg } = issue as Record<string, unknown>;
  const where = Array.isArray(loc) ? loc.filter((part) => part !== 'body').join('.') : '';
  const what = typeof msg === 'string' ? msg : '';
  return where && what ? `${where}: ${what}` : what;
}
