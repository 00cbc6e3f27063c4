// The emulator's own endpoints under /_emulator/ (no auth; not part of the spec): counters for
// tests and benchmarks, NDJSON ground truth that later checks audit a client run against
// (prompts submitted twice, requests above the rate limit in any one-second window), and the rate
// limits in force, which a PUT changes on the running emulator.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody } from '../../../common/http-body.js';
import { jsonObjectBody, parseBody } from '../body.js';
import { validateRateLimitsChange } from '../config.js';
import type { EmulatorContext } from '../context.js';
import { EmulatorApiError } from '../errors.js';
import { MAX_BODY_BYTES, sendJson, sendNdjson } from '../../core/http.js';
import { changedLimits, type RateLimits } from '../rate-limit.js';
import type { WebhookOutcome } from '../stats.js';
import type { TaskPhase } from '../store.js';

/** Each route (the path after ADMIN_PREFIX) with the methods it answers, as an `Allow` header says them. */
export const ADMIN_ROUTES: ReadonlyMap<string, string> = new Map([
  ['stats', 'GET'],
  ['tasks', 'GET'],
  ['requests', 'GET'],
  ['rate-limits', 'GET, PUT'],
]);

export interface EmulatorStats {
  /** `{ "<METHOD> <route pattern>": { "<HTTP status>": count } }` */
  requests: Record<string, Record<string, number>>;
  tasks: Record<TaskPhase, number>;
  webhooks: Record<WebhookOutcome, number>;
  /** Credits taken at submit minus refunds of failed tasks. */
  credits_charged: number;
  tasks_total: number;
  /** Submits answered with the task an earlier submit of the same Idempotency-Key created. */
  idempotent_replays: number;
  /** Reference images (`image_urls`) downloaded and checked at submit. */
  reference_images_fetched: number;
}

export interface GroundTruthTask {
  id: string;
  account: string;
  prompt: string;
  n: number;
  size: string;
  resolution: string;
  /** The task state now (pending, processing, completed, failed); see `expired` for expiry. */
  status: string;
  expired: boolean;
  submitted_at_ms: number;
  /** The terminal moment, once reached; null before. */
  completed_at_ms: number | null;
  credits_cost: number;
}

export function collectStats(ctx: EmulatorContext): EmulatorStats {
  const now = ctx.clock.now();
  return {
    requests: ctx.stats.requestCounts(),
    tasks: ctx.store.countByPhase(now),
    webhooks: { ...ctx.stats.webhooks },
    credits_charged: ctx.store.creditsCharged(),
    tasks_total: ctx.store.size,
    idempotent_replays: ctx.stats.idempotentReplays,
    reference_images_fetched: ctx.references.fetched,
  };
}

function* groundTruth(ctx: EmulatorContext, now: number): Generator<GroundTruthTask> {
  for (const record of ctx.store.values()) {
    const terminal = !record.stuck && now >= record.endsAt;
    const phase = record.phaseAt(now);
    yield {
      id: record.id,
      account: record.account.id,
      prompt: record.prompt,
      n: record.n,
      size: record.size,
      resolution: record.resolution,
      status: phase !== 'expired' ? phase : record.failure ? 'failed' : 'completed',
      expired: phase === 'expired',
      submitted_at_ms: record.submittedAt,
      completed_at_ms: terminal ? record.endsAt : null,
      credits_cost: record.creditsAt(now),
    };
  }
}

/**
 * Validates `input` as a change of the rate limits and, when valid, puts the changed limits in
 * force; a change with any problem changes nothing.
 */
export function changeRateLimits(
  ctx: EmulatorContext,
  input: unknown,
): { limits: RateLimits; problems: string[] } {
  const { change, problems } = validateRateLimitsChange(input);
  if (change) ctx.limiter.setLimits(changedLimits(ctx.limiter.limits, change));
  return { limits: ctx.limiter.limits, problems };
}

/** Serves `name` (a key of ADMIN_ROUTES) for `method`, one of those it allows. */
export async function handleAdmin(
  ctx: EmulatorContext,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  name: string,
  query: URLSearchParams,
): Promise<void> {
  if (name === 'stats') {
    sendJson(res, 200, collectStats(ctx));
  } else if (name === 'tasks') {
    await sendNdjson(res, groundTruth(ctx, ctx.clock.now()));
  } else if (name === 'rate-limits') {
    if (method === 'PUT') await putRateLimits(ctx, req, res);
    else sendJson(res, 200, ctx.limiter.limits);
  } else {
    const since = Number(query.get('since_ms') ?? 0);
    await sendNdjson(res, ctx.stats.requestsSince(Number.isFinite(since) ? since : 0));
  }
}

async function putRateLimits(ctx: EmulatorContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = parseBody(await readBody(req, MAX_BODY_BYTES));
  if (body.kind === 'too_large') res.setHeader('connection', 'close');
  const { limits, problems } = changeRateLimits(ctx, jsonObjectBody(body));
  if (problems.length > 0)
    throw new EmulatorApiError('invalid_rate_limits', { problems: problems.join('; ') });
  sendJson(res, 200, limits);
}
