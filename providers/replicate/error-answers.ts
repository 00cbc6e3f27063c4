// Replicate's error answers read its way, on top of the common classification (api/classify.ts):
// - 429 is a rate limit (600 creates a minute, 3,000 other calls; docs: rate limits), never a
//   concurrency one. How long to wait comes from Retry-After when sent, else from the body: a
//   `retry_after` number, or the `detail`'s words, which the docs give two ways over time
//   ("Expected available in 1 second.", "Your rate limit resets in ~30s.").
// - 422 is a refused input or version ("Input validation failed", "Invalid version or not
//   permitted"): a BadRequestError, which no retry can fix.
import { errorFromStatus, type RequestContext } from '../../api/classify.js';
import { readErrorBody } from '../../api/error-body.js';
import { BadRequestError, RateLimitError, type ImageApiError } from '../../api/errors.js';

type Headers = Record<string, string | string[] | undefined>;

const WAIT_WORDS =
  /\b(?:in|after)\s+~?\s*(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m)\b/i;

/** How long a 429's body asks to wait, in ms, or undefined when it does not say. */
export function waitFromBody(body: string): number | undefined {
  try {
    const retryAfter = (JSON.parse(body) as { retry_after?: unknown } | null)?.retry_after;
    if (typeof retryAfter === 'number' && Number.isFinite(retryAfter) && retryAfter >= 0)
      return Math.round(retryAfter * 1000);
  } catch {
    // Not JSON: the detail below is not there either.
  }
  const match = WAIT_WORDS.exec(readErrorBody(body)?.apiMessage ?? '');
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2]!.toLowerCase();
  const scale = unit.startsWith('ms') || unit.startsWith('milli') ? 1 : unit.startsWith('m') ? 60_000 : 1000;
  return Math.round(amount * scale);
}

/** The refinement `errorFor` of one call: the common classification, read Replicate's way. */
export function replicateErrorFor(
  ctx: RequestContext,
): (status: number, headers: Headers, body: string) => ImageApiError | undefined {
  return (status, headers, body) => {
    if (status !== 429 && status !== 422) return undefined;
    const common = errorFromStatus(ctx, status, headers, body);
    const details = {
      endpoint: common.endpoint,
      httpStatus: status,
      ...(common.apiType !== undefined ? { apiType: common.apiType } : {}),
      ...(common.apiCode !== undefined ? { apiCode: common.apiCode } : {}),
    };
    if (status === 422) return new BadRequestError(common.message, details);
    const retryAfterMs = common.retryAfterMs ?? waitFromBody(body);
    return new RateLimitError(common.message, {
      ...details,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      limit: 'rate',
    });
  };
}
