// The emulator's own endpoints under /_emulator/ (no auth; not part of the spec): counters for
// tests and benchmarks, and NDJSON ground truth that later checks audit a client run against
// (prompts submitted twice, requests above the rate limit in any one-second window).
import type { ServerResponse } from 'node:http';
import type { EmulatorContext } from '../context.js';
import { sendJson, sendNdjson } from '../http.js';
import type { WebhookOutcome } from '../stats.js';
import type { TaskPhase } from '../store.js';

export const ADMIN_PREFIX = '/_emulator/';
export const ADMIN_ROUTES = ['stats', 'tasks', 'requests'] as const;

export interface EmulatorStats {
  /** `{ "<METHOD> <route pattern>": { "<HTTP status>": count } }` */
  requests: Record<string, Record<string, number>>;
  tasks: Record<TaskPhase, number>;
  webhooks: Record<WebhookOutcome, number>;
  /** Credits taken at submit minus refunds of failed tasks. */
  credits_charged: number;
  tasks_total: number;
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

/** Serves `name`, one of ADMIN_ROUTES (the path after `/_emulator/`). */
export async function handleAdmin(
  ctx: EmulatorContext,
  res: ServerResponse,
  name: string,
  query: URLSearchParams,
): Promise<void> {
  if (name === 'stats') {
    sendJson(res, 200, collectStats(ctx));
  } else if (name === 'tasks') {
    await sendNdjson(res, groundTruth(ctx, ctx.clock.now()));
  } else {
    const since = Number(query.get('since_ms') ?? 0);
    await sendNdjson(res, ctx.stats.requestsSince(Number.isFinite(since) ? since : 0));
  }
}
