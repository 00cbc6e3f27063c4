// POST /v1/images/generations, synchronous: the body checked (400 with `param`), the per-minute
// limits (429 with the rate-limit headers), moderation (400 moderation_blocked), then the call is
// held for a generation time drawn from `images.generation_seconds` (scaled) and answered with the
// images as base64: `{created, background, data: [{b64_json}], output_format, quality, size, usage}`.
// A client that goes away while held cancels its timer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, uniform } from '../../core/index.js';
import type { OpenAIKey } from '../auth.js';
import type { OpenAIContext } from '../context.js';
import {
  invalidRequest,
  moderationBlockedBody,
  OpenAIApiError,
  rateLimited,
  SERVER_ERROR_BODY,
} from '../errors.js';
import { hex32 } from '../ids.js';
import { checkImageRequest, hasBlockedWord, usageOf, type ImageRequest } from '../image-request.js';
import { base64Slices } from '../output-file.js';

export async function generateImages(
  ctx: OpenAIContext,
  req: IncomingMessage,
  res: ServerResponse,
  key: OpenAIKey,
): Promise<void> {
  const body = await readJsonBody(req);
  if (body.kind === 'too_large') throw invalidRequest('The request body is too large.', null, null, 413);
  if (body.kind !== 'json')
    throw invalidRequest(
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
    );
  const request = checkImageRequest(body.value, ctx.config.images.models);
  if (request instanceof OpenAIApiError) throw request;

  const admission = ctx.limiter.take(key.account, request.n, ctx.clock.now());
  if (!admission.ok) {
    ctx.stats.fault(`rate_limited_${admission.unit}`);
    const headers = { ...admission.headers };
    if (ctx.config.limits.retry_after) headers['retry-after'] = String(admission.waitSeconds);
    throw rateLimited(
      {
        model: request.model,
        organization: key.account,
        unit: admission.unit,
        limit: admission.limit,
        waitSeconds: admission.waitSeconds,
      },
      headers,
    );
  }
  const requestId = `req_${hex32(ctx.random.sync)}`;
  const headers = { ...admission.headers, 'x-request-id': requestId };
  const knobs = ctx.config;
  const moderated =
    hasBlockedWord(request.prompt, knobs.batches.moderation_words) ||
    ctx.random.sync() < knobs.batches.moderation_rate;
  if (moderated) throw new OpenAIApiError(400, moderationBlockedBody(requestId), headers);

  const heldMs = uniform(ctx.random.sync, knobs.images.generation_seconds) * 1000 * knobs.time_scale;
  const failed = ctx.random.sync() < knobs.images.failure_rate;
  if (!(await hold(ctx, res, heldMs))) return;
  if (failed) throw new OpenAIApiError(500, SERVER_ERROR_BODY, headers);
  await sendImages(ctx, res, request, headers);
}

/** Waits `ms` of the emulator's clock; false when the client went away meanwhile. */
function hold(ctx: OpenAIContext, res: ServerResponse, ms: number): Promise<boolean> {
  if (ms <= 0) return Promise.resolve(!res.destroyed);
  return new Promise((resolve) => {
    const onClose = (): void => {
      timer.cancel();
      resolve(false);
    };
    const timer = ctx.clock.setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

async function sendImages(
  ctx: OpenAIContext,
  res: ServerResponse,
  request: ImageRequest,
  headers: Record<string, string>,
): Promise<void> {
  const data: { b64_json: string }[] = [];
  for (let i = 0; i < request.n; i++) {
    const { parts } = await ctx.images.get(request, i);
    data.push({ b64_json: [...base64Slices(parts)].join('') });
  }
  const json = JSON.stringify({
    created: Math.floor(ctx.clock.now() / 1000),
    background: request.background,
    data,
    output_format: request.format,
    quality: request.quality,
    size: request.size,
    usage: usageOf(request),
  });
  res.writeHead(200, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}
