// POST /{model_id} (sub-path allowed: fal-ai/flux/dev): the queue accepts any JSON body and
// answers IN_QUEUE with the request's URLs at once; the model validates it on the runner, so a bad
// input ends as a COMPLETED request whose result is the model's 422. The submit reads
// ?fal_webhook=, X-Fal-Request-Timeout (a deadline to start, queue wait included), x-fal-no-retry
// and X-Fal-Object-Lifecycle-Preference (how long the images live), and draws everything about the
// request's future here, so the journal line written before the answer fixes it.
import type { IncomingMessage } from 'node:http';
import { readJsonBody } from '../../core/http.js';
import { seededUuid, type Random } from '../../core/random-streams.js';
import type { FalModelConfig } from '../config.js';
import type { FalContext, FalKey } from '../context.js';
import { validateFluxInput, type ValidationIssue } from '../input.js';
import type { FalJobData, ImageFault } from '../job-data.js';
import { resultSizeEstimate } from '../results.js';
import { requestError, requestUrls, type Answer } from '../wire.js';

/** The queue retries a failing runner attempt up to 10 times (docs.fal.ai, reliability). */
export const MAX_RUNNER_RETRIES = 10;
/** Lower bound of X-Fal-Request-Timeout (docs.fal.ai, platform headers: "> 0.1 seconds"). */
const MIN_REQUEST_TIMEOUT = 0.1;
/** `expiration_duration_seconds: null` means no expiry: a century. */
const NEVER_SECONDS = 100 * 365 * 86_400;

export interface SubmitTarget {
  model: string;
  app: string;
}

/** What the submit asked for beyond its body, or the 400 that says why it cannot be read. */
interface SubmitOptions {
  webhook: string | null;
  startTimeout: number | null;
  cdnSeconds: number;
  noRetry: boolean;
}

/**
 * An absolute http(s) URI as RFC 3986 writes it: ASCII only (a host such as `Ï` is an IRI, not a
 * URI), no spaces or controls, and one that the WHATWG parser takes without changing its host.
 */
export function isWebhookUri(value: string): boolean {
  if (!/^[\x21-\x7e]+$/.test(value) || !/^https?:\/\//i.test(value)) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function readOptions(ctx: FalContext, req: IncomingMessage, query: URLSearchParams): SubmitOptions | Answer {
  const scale = ctx.config.scale_client_durations ? 1 : 1 / ctx.config.time_scale;
  const bad = (detail: string): Answer => requestError(400, detail, 'bad_request');
  const webhook = query.get('fal_webhook');
  if (webhook !== null && !isWebhookUri(webhook)) return bad('fal_webhook must be an absolute http(s) URI');
  let startTimeout: number | null = null;
  const timeoutHeader = req.headers['x-fal-request-timeout'];
  if (timeoutHeader !== undefined) {
    const value = Number(Array.isArray(timeoutHeader) ? timeoutHeader[0] : timeoutHeader);
    if (!Number.isFinite(value) || value <= MIN_REQUEST_TIMEOUT)
      return bad(`X-Fal-Request-Timeout must be a number of seconds greater than ${MIN_REQUEST_TIMEOUT}`);
    startTimeout = value * scale;
  }
  let cdnSeconds = ctx.config.retention.cdn_seconds;
  const lifecycle = req.headers['x-fal-object-lifecycle-preference'];
  if (typeof lifecycle === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(lifecycle);
    } catch {
      return bad('X-Fal-Object-Lifecycle-Preference must be a JSON object');
    }
    const seconds = (parsed as { expiration_duration_seconds?: unknown } | null)?.expiration_duration_seconds;
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      (seconds !== undefined && seconds !== null && !(typeof seconds === 'number' && seconds >= 0))
    )
      return bad('expiration_duration_seconds must be a number of seconds or null');
    if (seconds === null) cdnSeconds = NEVER_SECONDS;
    else if (typeof seconds === 'number') cdnSeconds = seconds * scale;
  }
  const noRetry = /^(1|true|yes)$/i.test(String(req.headers['x-fal-no-retry'] ?? ''));
  return { webhook, startTimeout, cdnSeconds, noRetry };
}

/** Runner attempts that fail before one runs, drawn for all 11 attempts so the stream stays aligned. */
function drawRunnerFailures(random: Random, rate: number): number {
  let failures = 0;
  let ran = false;
  for (let attempt = 0; attempt <= MAX_RUNNER_RETRIES; attempt++) {
    const fails = random() < rate;
    if (!ran && fails) failures++;
    else ran = true;
  }
  return failures;
}

function drawImageFault(random: Random, faults: FalContext['config']['faults']): ImageFault | null {
  const draw = random();
  const shares: [ImageFault, number][] = [
    ['blank', faults.blank_image_rate],
    ['corrupt', faults.corrupt_image_rate],
    ['wrong_size', faults.wrong_size_image_rate],
    ['wrong_format', faults.wrong_format_image_rate],
  ];
  let below = 0;
  for (const [fault, share] of shares) if (draw < (below += share)) return fault;
  return null;
}

function newRequestId(ctx: FalContext): string {
  let id = seededUuid(ctx.random.ids);
  // After a restart the id stream starts again from the seed: skip the ids it already gave.
  while (ctx.sim.has(id)) id = seededUuid(ctx.random.ids);
  return id;
}

export async function handleSubmit(
  ctx: FalContext,
  req: IncomingMessage,
  query: URLSearchParams,
  key: FalKey,
  target: SubmitTarget,
  model: FalModelConfig,
): Promise<{ answer: Answer; dropConnection: boolean }> {
  const body = await readJsonBody(req);
  if (body.kind === 'too_large')
    return { answer: { status: 413, body: { detail: 'Request body is too large' } }, dropConnection: false };
  const options = readOptions(ctx, req, query);
  if ('status' in options) return { answer: options, dropConnection: false };
  const { config } = ctx;
  const { faults, generation, retention } = config;

  const validated =
    body.kind === 'json'
      ? validateFluxInput(body.value, model.max_images)
      : {
          issues: [
            {
              loc: ['body'],
              msg: 'JSON decode error',
              type: 'json_invalid',
              url: 'https://docs.fal.ai/errors#json_invalid',
            },
          ] as ValidationIssue[],
        };
  const input = validated.input ?? null;
  const extras = ctx.random.extras;
  // A fixed number of draws per submit, whatever it asks for.
  const seedDraw = Math.floor(extras() * 2 ** 31);
  const failures = drawRunnerFailures(extras, faults.runner_retry_rate);
  const payloadError = extras() < config.webhooks.payload_error_rate;
  const imageFault = drawImageFault(extras, faults);
  const runnerUnavailable = options.noRetry ? failures > 0 : failures > MAX_RUNNER_RETRIES;
  const runnerRetries = options.noRetry ? 0 : Math.min(failures, MAX_RUNNER_RETRIES);
  const prompt = input?.prompt.toLowerCase() ?? '';
  const moderated =
    input !== null &&
    input.safetyChecker &&
    generation.blocked_words.some((word) => prompt.includes(word.toLowerCase()));

  const id = newRequestId(ctx);
  const data: FalJobData = {
    model: target.model,
    app: target.app,
    input,
    invalid: input ? null : validated.issues,
    runnerUnavailable,
    runnerRetries,
    seed: input?.seed ?? seedDraw,
    gatewayRequestId: runnerRetries > 0 ? seededUuid(ctx.random.ids) : id,
    cdnSeconds: options.cdnSeconds,
    imageFault: input && !moderated ? imageFault : null,
    moderation: model.moderation,
    webhookPayloadError: options.webhook !== null && payloadError,
  };
  const job = ctx.sim.submit({
    id,
    account: key.account,
    queueSeconds: generation.queue_seconds,
    runSeconds: input ? model.seconds : [generation.validation_seconds, generation.validation_seconds],
    extraRunSeconds: runnerRetries * faults.runner_retry_seconds,
    failureRate: input === null || runnerUnavailable ? 1 : generation.failure_rate,
    stuckRate: faults.stuck_request_rate,
    moderated,
    startTimeoutSeconds: options.startTimeout,
    retentionSeconds: (drawn) =>
      resultSizeEstimate(drawn, ctx.base, config.time_scale) >= retention.large_result_bytes
        ? retention.large_result_seconds
        : retention.result_seconds,
    webhook: options.webhook,
    data,
  });
  if (options.webhook !== null) ctx.endTimers.watch(job);
  if (job.record.planned === 'stuck') ctx.stats.fault('stuck_request');
  if (runnerRetries > 0) ctx.stats.fault('runner_retry', runnerRetries);
  if (runnerUnavailable) ctx.stats.fault('runner_unavailable');
  if (data.imageFault) ctx.stats.fault(`${data.imageFault}_image`);

  const dropConnection =
    faults.lost_submit_response_rate > 0 && ctx.random.submits() < faults.lost_submit_response_rate;
  if (dropConnection) ctx.stats.fault('lost_submit_response');
  const urls = requestUrls(ctx.base, job);
  return {
    answer: {
      status: 200,
      body: {
        status: 'IN_QUEUE',
        ...urls,
        ...(options.webhook === null ? {} : { gateway_request_id: data.gatewayRequestId }),
        ...(ctx.config.queue_position_at_submit ? { queue_position: ctx.sim.queuePosition(job) } : {}),
      },
      headers: { 'x-fal-request-id': job.id },
    },
    dropConnection,
  };
}
