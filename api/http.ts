// One JSON round trip to the API: send, read the answer with a size cap, classify failures
// (classify.ts) and validate 2xx bodies against a zod schema. Knows nothing about endpoints.
import { request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { PixelmillError } from '../common/errors.js';
import { errorFromStatus, errorFromTransport, excerpt, type RequestContext } from './classify.js';
import { ImageApiError, InvalidResponseError } from './errors.js';

// A batch answer for 500 ids is a few tens of KiB; anything near this cap is not our API.
const MAX_SUCCESS_BYTES = 8 * 1024 * 1024;
// Enough to hold an error envelope; the rest of an error page is only read to free the socket.
export const MAX_ERROR_BYTES = 64 * 1024;

export interface JsonCall<S extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Absolute URL of the endpoint. */
  url: URL;
  headers: Record<string, string>;
  body?: unknown;
  schema: S;
  signal?: AbortSignal;
  /**
   * A provider's own reading of an error answer (fal's start timeout, a model's error), tried
   * before the common classification; undefined leaves the answer to it.
   */
  errorFor?: (
    status: number,
    headers: Record<string, string | string[] | undefined>,
    body: string,
  ) => ImageApiError | undefined;
}

/**
 * Internal signal of readText; callers see it as an InvalidResponseError, retryable as that is
 * (an oversized answer is a garbled one: another attempt may get a proper body).
 */
export class BodyTooLarge extends PixelmillError {
  override name = 'BodyTooLarge';
  readonly code = 'api_body_too_large';
  readonly retryable = true;

  constructor(limit: number) {
    super(`body exceeds ${limit} bytes`);
  }
}

export async function readText(body: Dispatcher.ResponseData['body'], limit: number, failOver: boolean) {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    if (size + buffer.length > limit) {
      chunks.push(buffer.subarray(0, limit - size));
      size = limit;
      body.destroy();
      if (failOver) throw new BodyTooLarge(limit);
      break;
    }
    chunks.push(buffer);
    size += buffer.length;
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length === 0 ? '(root)' : issue.path.join('.')}: ${issue.message}`)
    .join('; ');
}

/** Performs the call; resolves with the schema's output or rejects with an `ImageApiError`. */
export async function callJson<S extends z.ZodType>(
  dispatcher: Dispatcher,
  ctx: RequestContext,
  call: JsonCall<S>,
): Promise<z.output<S>> {
  const invalid = (why: string, cause?: unknown) =>
    new InvalidResponseError(`${ctx.target} returned an invalid response: ${why}`, {
      endpoint: ctx.endpoint,
      // A garbled acknowledgement of a POST may still mean the server acted on it.
      outcomeUnknown: call.method !== 'GET',
      cause,
    });

  let statusCode: number;
  let text: string;
  try {
    const response = await request(call.url, {
      dispatcher,
      method: call.method,
      headers:
        call.body === undefined ? call.headers : { ...call.headers, 'content-type': 'application/json' },
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
      signal: call.signal,
    });
    statusCode = response.statusCode;
    const ok = statusCode >= 200 && statusCode < 300;
    text = await readText(response.body, ok ? MAX_SUCCESS_BYTES : MAX_ERROR_BYTES, ok);
    if (!ok)
      throw (
        call.errorFor?.(statusCode, response.headers, text) ??
        errorFromStatus(ctx, statusCode, response.headers, text)
      );
  } catch (error) {
    // The caller cancelled: that is not an API failure, so its own reason propagates untouched.
    if (call.signal?.aborted) throw error;
    if (error instanceof BodyTooLarge) throw invalid(error.message);
    if (error instanceof ImageApiError) throw error;
    throw errorFromTransport(ctx, error);
  }

  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalid(`not JSON (HTTP ${statusCode}): ${excerpt(text, ctx.redact) || '(empty body)'}`);
  }
  const parsed = call.schema.safeParse(json);
  if (!parsed.success) {
    throw invalid(`${excerpt(describeIssues(parsed.error), ctx.redact)}; body: ${excerpt(text, ctx.redact)}`);
  }
  return parsed.data;
}
