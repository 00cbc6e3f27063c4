// The emulator's own endpoints under /_emulator/ (no key; not part of BFL's API): counters, the
// ground truth of every task as NDJSON (so a test can audit a client run: prompts submitted
// twice, peak active tasks, results that expired before anyone downloaded them and how close to
// it the rest were downloaded, credits), and the limits in force, which a PUT changes on the
// running emulator.
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  readJsonBody,
  retentionShare,
  sendJson,
  sendNdjson,
  type ResultFetch,
  type RetentionShare,
} from '../../core/index.js';
import { validateLimitsChange, type BflLimits } from '../config.js';
import type { BflContext } from '../context.js';
import { BflApiError } from '../errors.js';
import { sampleExpiresAt, sampleTtlMs } from '../results.js';
import type { BflJob } from '../tasks.js';
import { BFL_STATUSES, statusOf, type BflStatus } from '../views.js';

/** Each admin route (path after the prefix) with the methods it answers. */
export const ADMIN_ROUTES: ReadonlyMap<string, string> = new Map([
  ['stats', 'GET'],
  ['tasks', 'GET'],
  ['limits', 'GET, PUT'],
]);

export interface BflEmulatorStats {
  /** `{ "<METHOD> <route pattern>": { "<HTTP status>": count } }` */
  requests: Record<string, Record<string, number>>;
  /** Tasks by the status get_result gives now ("Task not found": past retention). */
  tasks: Record<BflStatus, number>;
  tasks_total: number;
  /** The most tasks active (submitted, not ended) at one instant, per account. */
  peak_active: Record<string, number>;
  /** Prompts accepted more than once (the same text, any model). */
  prompts_submitted_twice: number;
  /** get_result requests that came under another host than polling_host (answered "Task not found"). */
  polls_on_other_host: number;
  credits: {
    /** Costs taken at submit. */
    taken: number;
    /** Given back to tasks that ended moderated (or in Error, unless billing.charge_errors). */
    refunded: number;
    /** Taken minus refunded: what the account paid (stuck tasks included: they never end). */
    charged: number;
  };
  webhooks: Record<string, number>;
  samples: {
    /** Complete downloads of sample URLs. */
    downloads: number;
    /** Ready tasks downloaded at least once. */
    fetched: number;
    /** Ready tasks whose sample URL expired before anyone downloaded it. */
    expired_before_download: number;
    /** Delivery requests refused because their URL had expired. */
    refused_expired: number;
    /**
     * Ready tasks downloaded: from Ready to the first complete download of the sample, over the
     * time a sample can still be had (the URL's url_ttl_seconds from Ready; with resign_on_poll,
     * a poll signs a new URL until the task itself is deleted).
     */
    ready_to_fetch_share: RetentionShare;
  };
  /** Faults injected, by name. */
  faults: Record<string, number>;
}

export interface GroundTruthTask {
  id: string;
  account: string;
  /** The submitting key as `<account>/<position>`. */
  key: string;
  model: string;
  prompt: string;
  status: BflStatus;
  width: number;
  height: number;
  format: string;
  cost: number;
  /** Whether its cost is kept (false for moderated tasks, and Error unless charge_errors). */
  charged: boolean;
  webhook: boolean;
  /** A stuck task: Pending forever. */
  stuck: boolean;
  submitted_at_ms: number;
  started_at_ms: number | null;
  ended_at_ms: number | null;
  /** When get_result starts to say "Task not found"; null while it has not ended. */
  deleted_at_ms: number | null;
  /** Ready tasks: when the newest sample URL handed out stops working. */
  sample_expires_at_ms: number | null;
  /** The first complete download of its sample, if any. */
  sample_fetched_at_ms: number | null;
}

const finite = (ms: number): number | null => (Number.isFinite(ms) ? ms : null);

function peakActive(jobs: readonly BflJob[], now: number): Record<string, number> {
  const edges = new Map<string, [number, number][]>();
  for (const job of jobs) {
    let list = edges.get(job.account);
    if (!list) edges.set(job.account, (list = []));
    list.push([job.record.submittedAt, 1]);
    if (job.endsAt <= now) list.push([job.endsAt, -1]);
  }
  const peaks: Record<string, number> = {};
  for (const [account, list] of edges) {
    // An end at the same instant as a submit frees the slot first, as the 429 check sees it.
    list.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let active = 0;
    let peak = 0;
    for (const [, delta] of list) peak = Math.max(peak, (active += delta));
    peaks[account] = peak;
  }
  return peaks;
}

function isReadyResult(job: BflJob, now: number): boolean {
  return job.outcome === 'succeeded' && job.hasEndedAt(now);
}

/** How long after Ready a client that has not downloaded the sample yet can still get it. */
function sampleWindowMs(ctx: BflContext, job: BflJob): number {
  const task = job.record.retentionMs;
  return ctx.config.sample.resign_on_poll ? task : Math.min(sampleTtlMs(ctx), task);
}

export function collectStats(ctx: BflContext): BflEmulatorStats {
  const now = ctx.clock.now();
  const jobs = ctx.jobs.values();
  const tasks = Object.fromEntries(BFL_STATUSES.map((status) => [status, 0])) as Record<BflStatus, number>;
  const prompts = new Map<string, number>();
  let fetched = 0;
  let expiredUnfetched = 0;
  const fetches: ResultFetch[] = [];
  for (const job of jobs) {
    tasks[statusOf(job, now)]++;
    prompts.set(job.data.prompt, (prompts.get(job.data.prompt) ?? 0) + 1);
    if (!isReadyResult(job, now)) continue;
    const fetchedAt = job.resultFetchedAt;
    if (fetchedAt !== undefined) {
      fetched++;
      fetches.push({ readyAt: job.endsAt, fetchedAt, retentionMs: sampleWindowMs(ctx, job) });
    } else if (now >= sampleExpiresAt(ctx, job)) expiredUnfetched++;
  }
  const { taken, refunded } = ctx.ledger.totals(now);
  return {
    requests: ctx.stats.requests(),
    tasks,
    tasks_total: jobs.length,
    peak_active: peakActive(jobs, now),
    prompts_submitted_twice: [...prompts.values()].filter((n) => n > 1).length,
    polls_on_other_host: ctx.samples.pollsElsewhere,
    credits: { taken, refunded, charged: Math.round((taken - refunded) * 100) / 100 },
    webhooks: { ...ctx.stats.webhooks },
    samples: {
      downloads: ctx.samples.downloads,
      fetched,
      expired_before_download: expiredUnfetched,
      refused_expired: ctx.samples.refusedExpired,
      ready_to_fetch_share: retentionShare(fetches),
    },
    faults: ctx.stats.faults(),
  };
}

function* groundTruth(ctx: BflContext, now: number): Generator<GroundTruthTask> {
  for (const job of ctx.jobs.values()) {
    const ended = job.hasEndedAt(now);
    const ready = isReadyResult(job, now);
    yield {
      id: job.id,
      account: job.account,
      key: job.data.key,
      model: job.data.model,
      prompt: job.data.prompt,
      status: statusOf(job, now),
      width: job.data.width,
      height: job.data.height,
      format: job.data.format,
      cost: job.data.cost,
      charged: !ctx.ledger.refundable(job),
      webhook: job.record.webhook !== null,
      stuck: job.record.planned === 'stuck',
      submitted_at_ms: job.record.submittedAt,
      started_at_ms: job.startsAt <= now ? finite(job.startsAt) : null,
      ended_at_ms: ended ? job.endsAt : null,
      deleted_at_ms: ended ? job.deletedAt : null,
      sample_expires_at_ms: ready ? sampleExpiresAt(ctx, job) : null,
      sample_fetched_at_ms: job.resultFetchedAt ?? null,
    };
  }
}

/** Validates a change of the limits and, when valid, puts it in force; an invalid one changes nothing. */
export function changeLimits(ctx: BflContext, input: unknown): { limits: BflLimits; problems: string[] } {
  const { change, problems } = validateLimitsChange(input);
  if (!change) return { limits: ctx.limits, problems };
  const maxActive = { ...ctx.limits.max_active };
  for (const [model, limit] of Object.entries(change.max_active ?? {})) {
    if (limit === null) delete maxActive[model as keyof typeof maxActive];
    else if (limit !== undefined) maxActive[model as keyof typeof maxActive] = limit;
  }
  ctx.limits = {
    ...ctx.limits,
    active_tasks: change.active_tasks ?? ctx.limits.active_tasks,
    retry_after_seconds:
      change.retry_after_seconds === undefined ? ctx.limits.retry_after_seconds : change.retry_after_seconds,
    max_active: maxActive,
  };
  ctx.jobs.recordCustom('limits', ctx.limits);
  return { limits: ctx.limits, problems };
}

export async function handleAdmin(
  ctx: BflContext,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  name: string,
): Promise<void> {
  if (name === 'stats') {
    sendJson(res, 200, collectStats(ctx));
  } else if (name === 'tasks') {
    await sendNdjson(res, groundTruth(ctx, ctx.clock.now()));
  } else if (method === 'PUT') {
    const body = await readJsonBody(req);
    const { limits, problems } = changeLimits(ctx, body.kind === 'json' ? body.value : undefined);
    if (problems.length > 0) throw new BflApiError('validation', 400, { detail: problems.join('; ') });
    sendJson(res, 200, limits);
  } else {
    sendJson(res, 200, ctx.limits);
  }
}
