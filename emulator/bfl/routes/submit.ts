// POST /v1/{model}: validate the model's input (422), check the active-task limit (429) and the
// credits (402), then accept: the task's whole future is drawn now (core's job simulator) and the
// answer is `{id, polling_url, cost, input_mp, output_mp}` (OpenAPI AsyncResponse), or, for a
// request with a webhook_url, `{id, status, webhook_url, cost, ...}` (AsyncWebhookResponse).
//
// The polling_url is on `polling_host` when one is configured: BFL answers with regional hosts
// (api.eu2.bfl.ai), and a client must poll the URL it was given.
import type { IncomingMessage } from 'node:http';
import { MAX_BODY_BYTES, readJsonBody, seededUuid } from '../../core/index.js';
import type { BflKey } from '../auth.js';
import { type BflContext } from '../context.js';
import { insufficientCredits, tooManyActiveTasks, validationError } from '../errors.js';
import { inputImagesOf, MODEL_DEFS, outputSizeOf, type BflModel, type OutputFormat } from '../models.js';
import { priceOf } from '../pricing.js';
import type { BflJob, BflTaskData } from '../tasks.js';
import { MISSING_BODY_ISSUE, validateBody, type ValidatedInput } from '../validation.js';

/** Input images travel as base64 in the body: BFL takes far more than the core's 1 MiB. */
const MAX_SUBMIT_BYTES = 32 * MAX_BODY_BYTES;
/** Largest seed drawn for a request without one (BFL reports seeds as unsigned 32-bit). */
const MAX_DRAWN_SEED = 2 ** 32;

export type SubmitReply = { status: number; body: unknown } | { tooLarge: true };

export async function handleSubmit(
  ctx: BflContext,
  req: IncomingMessage,
  model: BflModel,
  key: BflKey,
): Promise<SubmitReply> {
  const body = await readJsonBody(req, MAX_SUBMIT_BYTES);
  if (body.kind === 'too_large') return { tooLarge: true };
  if (body.kind === 'empty') throw validationError([MISSING_BODY_ISSUE]);
  if (body.kind === 'invalid_json')
    throw validationError([
      {
        type: 'json_invalid',
        loc: ['body', 0],
        msg: 'JSON decode error',
        input: {},
        ctx: { error: 'Expecting value' },
      },
    ]);
  const { config } = ctx;
  const validated = validateBody(
    body.value,
    MODEL_DEFS[model].input,
    config.generation.extra_fields === 'forbid',
  );
  if ('issues' in validated) throw validationError(validated.issues);
  const input = validated.input;
  const sized = outputSizeOf(model, input, config.generation.max_megapixels);
  if ('problem' in sized)
    throw validationError([
      {
        type: 'value_error',
        loc: ['body'],
        msg: `Value error, ${sized.problem}`,
        input: body.value,
        ctx: { error: {} },
      },
    ]);

  const now = ctx.clock.now();
  const limits = ctx.limits;
  const scope = limits.scope === 'key' ? `key:${key.label}` : `account:${key.account}`;
  const active = ctx.active.count(scope, model, now);
  const modelLimit = limits.max_active[model];
  if (active.all >= limits.active_tasks)
    throw tooManyActiveTasks(limits.active_tasks, limits.retry_after_seconds);
  if (modelLimit !== undefined && active.model >= modelLimit)
    throw tooManyActiveTasks(modelLimit, limits.retry_after_seconds);

  const images = MODEL_DEFS[model].perMegapixel ? inputImagesOf(input).length : 0;
  const price = priceOf(config.models[model].cost, sized.size, images, config.generation.input_mp_per_image);
  if (ctx.ledger.balance(key.account, now) < price.cost) throw insufficientCredits();

  const job = accept(ctx, model, key, input, sized.size, price);
  return { status: 200, body: answerFor(ctx, job, input) };
}

function accept(
  ctx: BflContext,
  model: BflModel,
  key: BflKey,
  input: ValidatedInput,
  size: { width: number; height: number },
  price: ReturnType<typeof priceOf>,
): BflJob {
  const { config } = ctx;
  const prompt = typeof input.prompt === 'string' ? input.prompt : '';
  const moderation = moderationOf(ctx, prompt);
  // Drawn whether or not the request sent one, so a seed in one request does not shift the next.
  const drawnSeed = Math.floor(ctx.random.draws() * MAX_DRAWN_SEED);
  let id = seededUuid(ctx.random.ids);
  while (ctx.jobs.has(id)) id = seededUuid(ctx.random.ids);
  const data: BflTaskData = {
    model,
    key: key.label,
    prompt,
    seed: typeof input.seed === 'number' ? input.seed : drawnSeed,
    format: (input.output_format ?? 'jpeg') as OutputFormat,
    width: size.width,
    height: size.height,
    cost: price.cost,
    inputMp: price.inputMp,
    outputMp: price.outputMp,
    moderation,
    webhookSecret: typeof input.webhook_secret === 'string' ? input.webhook_secret : null,
  };
  const job = ctx.jobs.submit({
    id,
    account: key.account,
    queueSeconds: config.generation.queue_seconds,
    // Request moderation happens before generation: the task ends as soon as it would start.
    runSeconds: moderation === 'request' ? [0, 0] : config.models[model].seconds,
    failureRate: config.generation.failure_rate,
    stuckRate: config.faults.stuck_task_rate,
    moderated: moderation !== null,
    retentionSeconds: config.task_retention_seconds,
    webhook: typeof input.webhook_url === 'string' ? input.webhook_url : null,
    data,
  });
  track(ctx, job);
  return job;
}

/**
 * Puts an accepted job, or one restored from the journal at `restoredAt`, on the books: active
 * slots under both scopes, credits, and its webhook, except a restored job's that fell due while
 * the emulator was down (a receiver that was down would have missed it too; polling is the net).
 */
export function track(ctx: BflContext, job: BflJob, restoredAt?: number): void {
  ctx.active.add(`account:${job.account}`, job);
  ctx.active.add(`key:${job.data.key}`, job);
  ctx.ledger.take(job);
  const missed = restoredAt !== undefined && job.hasEndedAt(restoredAt);
  if (job.record.webhook !== null && !missed) ctx.endTimers.watch(job);
}

/** Blocked words first (they always apply), then the configured rates; each draw always made. */
function moderationOf(ctx: BflContext, prompt: string): BflTaskData['moderation'] {
  const { generation } = ctx.config;
  const lower = prompt.toLowerCase();
  const requestDraw = ctx.random.draws();
  const contentDraw = ctx.random.draws();
  if (generation.request_moderation_words.some((word) => lower.includes(word.toLowerCase())))
    return 'request';
  if (generation.content_moderation_words.some((word) => lower.includes(word.toLowerCase())))
    return 'content';
  if (requestDraw < generation.request_moderation_rate) return 'request';
  if (contentDraw < generation.content_moderation_rate) return 'content';
  return null;
}

function answerFor(ctx: BflContext, job: BflJob, input: ValidatedInput): Record<string, unknown> {
  const billing = { cost: job.data.cost, input_mp: job.data.inputMp, output_mp: job.data.outputMp };
  if (typeof input.webhook_url === 'string' && ctx.config.webhooks.submit_answer === 'webhook_response')
    return { id: job.id, status: 'Pending', webhook_url: input.webhook_url, ...billing };
  return { id: job.id, polling_url: pollingUrl(ctx, job.id), ...billing };
}

export function pollingUrl(ctx: BflContext, id: string): string {
  return `${ctx.urls.polling}/v1/get_result?id=${encodeURIComponent(id)}`;
}
