// The lines of OpenAI's Batch files, both ways: a request line per item for the input file
// (`{custom_id, method, url, body}`), and the reading of each line of the output and error files
// (`{id, custom_id, response: {status_code, body}, error}`) into pixelmill's words: the item's
// base64 images and usage, or its failure. Pure: the activities stream the files and store.
import type { ErrorSummary } from '../../common/types.js';
import type { ProviderRequest } from '../types.js';
import { ErrorBodySchema, ImagesResponseSchema, ResultLineSchema, type Usage } from './wire.js';

export const GENERATIONS_ENDPOINT = '/v1/images/generations';

/**
 * A request's `custom_id`: `<generation key digest>:<plan index>:<attempt>`. The key (its first 32
 * hex digits) ties the line to what the item asks, the index tells two items with the same key
 * apart (custom_ids must be unique in a batch), the attempt tells a line of an earlier batch of
 * the item from this one's. 48 characters at most: within the 64 some of OpenAI's clients check.
 */
export interface CustomId {
  key: string;
  index: number;
  attempt: number;
}

const KEY_DIGITS = 32;
const CUSTOM_ID = /^([0-9a-f]{1,64}):(\d{1,9}):(\d{1,4})$/;

/** The digest part of a generation key (`g1-<hex>`), as custom_ids carry it. */
export function keyDigest(generationKey: string): string {
  return generationKey.replace(/^[^-]*-/, '').slice(0, KEY_DIGITS);
}

export function customIdOf(id: CustomId): string {
  return `${id.key}:${id.index}:${id.attempt}`;
}

export function parseCustomId(text: string): CustomId | undefined {
  const match = CUSTOM_ID.exec(text);
  if (!match) return undefined;
  return { key: match[1]!, index: Number(match[2]), attempt: Number(match[3]) };
}

/** One line of a batch's input file (with its newline). */
export function requestLine(customId: string, request: ProviderRequest): string {
  return `${JSON.stringify({ custom_id: customId, method: 'POST', url: GENERATIONS_ENDPOINT, body: request.body })}\n`;
}

/** What one line of an output or error file says about its request. */
export type LineReading =
  | { kind: 'images'; customId: string; requestId?: string; images: string[]; usage?: Usage; format?: string }
  | { kind: 'failed'; customId: string; requestId?: string; error: ErrorSummary }
  /** Not a line pixelmill can read: the item it names (when its custom_id could be found) fails alone. */
  | { kind: 'unreadable'; customId?: string; error: ErrorSummary };

/** A line that cannot be read, or whose image cannot be: generated again by the default retry policy. */
export function unreadable(code: string, message: string): ErrorSummary {
  return { type: 'generation_error', code, message };
}

/** Reads one line (without its newline). */
export function readResultLine(text: string): LineReading {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return unreadableLine(
      text,
      'malformed_result_line',
      'its line of the output file is not JSON (cut off?)',
    );
  }
  const parsed = ResultLineSchema.safeParse(json);
  if (!parsed.success)
    return unreadableLine(
      text,
      'malformed_result_line',
      'its line of the output file has no custom_id or response',
    );
  const line = parsed.data;
  const base = { customId: line.custom_id, ...(line.id ? { requestId: line.id } : {}) };
  const response = line.response;
  if (!response) {
    const error = line.error;
    return {
      kind: 'failed',
      ...base,
      error: failureOf(
        undefined,
        error?.code ?? undefined,
        error?.message ?? 'the request failed without a response',
      ),
    };
  }
  if (response.status_code !== 200) {
    const body = ErrorBodySchema.safeParse(response.body);
    const error = body.success ? body.data.error : undefined;
    return {
      kind: 'failed',
      ...base,
      error: failureOf(
        response.status_code,
        error?.code ?? error?.type ?? undefined,
        error?.message ?? `the request answered HTTP ${response.status_code}`,
      ),
    };
  }
  const body = ImagesResponseSchema.safeParse(response.body);
  const images = body.success ? (body.data.data ?? []).map((image) => image.b64_json ?? '') : [];
  if (images.length === 0 || images.some((image) => image === ''))
    return {
      kind: 'unreadable',
      customId: line.custom_id,
      error: unreadable('no_image_output', 'its response holds no base64 image (b64_json)'),
    };
  return {
    kind: 'images',
    ...base,
    images,
    ...(body.data?.usage ? { usage: body.data.usage } : {}),
    ...(body.data?.output_format ? { format: body.data.output_format } : {}),
  };
}

/** A line that did not parse: the custom_id, when its text still shows one, says whose it was. */
function unreadableLine(text: string, code: string, message: string): LineReading {
  const found = /"custom_id"\s*:\s*"([^"\\]{1,80})"/.exec(text.slice(0, 4096));
  return { kind: 'unreadable', ...(found ? { customId: found[1]! } : {}), error: unreadable(code, message) };
}

/** Moderation is final; a server's failure, a timeout or a rate limit is worth another try. */
const MODERATION = /moderation|content.?policy|safety|blocked/i;

/** A failed request's answer as pixelmill's failure: moderation, a retryable failure, or the request's own fault. */
export function failureOf(
  status: number | undefined,
  code: string | undefined,
  message: string,
): ErrorSummary {
  if (MODERATION.test(code ?? '') || (status === 400 && MODERATION.test(message)))
    return { type: 'content_policy_violation', code: code ?? 'moderation_blocked', message };
  if (status === undefined || status >= 500 || status === 408 || status === 429)
    return {
      type: 'generation_error',
      code: code ?? (status ? `http_${status}` : 'request_failed'),
      message,
    };
  return { type: 'BadRequestError', code: code ?? `http_${status}`, message };
}
