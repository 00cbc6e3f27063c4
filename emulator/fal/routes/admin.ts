// The fal emulator's own endpoints under /_emulator/ (no key; not part of fal's API): counters
// (requests by route and status, requests by phase, peak IN_PROGRESS, webhooks, faults, what would
// be billed, what retention deleted before a client got it and how close to it clients fetched
// the rest), the ground truth of every request as
// NDJSON for audits (prompts submitted twice, peak concurrency, results deleted before they were
// fetched), the concurrency limits (a PUT changes them on the running emulator) and a webhook key
// rotation.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { Job, JobPhase } from '../../core/job.js';
import { readJsonBody, sendNdjson } from '../../core/http.js';
import { retentionShare, type ResultFetch, type RetentionShare } from '../../core/stats.js';
import type { WebhookOutcome } from '../../core/webhooks.js';
import type { FalContext } from '../context.js';
import type { FalJobData } from '../job-data.js';
import { flagged, hasImages, imagePlans } from '../results.js';
import { JWKS_PATH, type Jwk } from '../signing.js';
import type { Answer } from '../wire.js';
import { cdnExpiresAt } from './cdn.js';

/** Each route (after the prefix) with the methods it answers, as an Allow header says them. */
export const ADMIN_ROUTES: ReadonlyMap<string, string> = new Map([
  ['stats', 'GET'],
  ['requests', 'GET'],
  ['limits', 'GET, PUT'],
  ['webhook-keys', 'GET, POST'],
]);

/** Why a finished request is not billed (fal bills output; 5xx, cancels and start timeouts are free). */
type Unbilled =
  'model_error' | 'validation_error' | 'content_policy' | 'runner_unavailable' | 'cancelled' | 'timed_out';

export interface FalEmulatorStats {
  /** `{ "<METHOD> <route pattern>": { "<HTTP status>": count } }` */
  requests: Record<string, Record<string, number>>;
  requests_total: number;
  /** Requests by phase now (queued = IN_QUEUE, running = IN_PROGRESS, then how they ended, or deleted). */
  phases: Record<JobPhase, number>;
  /** The most requests IN_PROGRESS at one instant so far. */
  peak_in_progress: number;
  concurrency: { default: number | null; accounts: Record<string, number> };
  webhooks: Record<WebhookOutcome, number>;
  faults: Record<string, number>;
  billing: {
    billed_requests: number;
    billed_images: number;
    billed_megapixels: number;
    cost_usd: number;
    unbilled: Record<Unbilled, number>;
  };
  retention: {
    results_fetched: number;
    /** Results whose retention ended before any client fetched them (nor got them in a webhook). */
    results_deleted_unfetched: number;
    images_downloaded: number;
    /** Images whose CDN lifetime ended before a whole download. */
    images_deleted_undownloaded: number;
    /**
     * Completed requests' results: from COMPLETED to the first fetch of the result (or its
     * delivered webhook), over the result's retention.
     */
    ready_to_fetch_share: RetentionShare;
  };
  webhook_keys: number;
}

function unbilledReason(job: Job<FalJobData>): Unbilled | undefined {
  switch (job.outcome) {
    case 'moderated':
      return flagged(job) ? undefined : 'content_policy';
    case 'failed':
      return job.data.invalid
        ? 'validation_error'
        : job.data.runnerUnavailable
          ? 'runner_unavailable'
          : 'model_error';
    case 'cancelled':
    case 'timed_out':
      return job.outcome;
    default:
      return undefined;
  }
}

const megapixels = (job: Job<FalJobData>): number =>
  imagePlans(job).reduce((sum, plan) => sum + (plan.width * plan.height) / 1e6, 0);

export function collectStats(ctx: FalContext): FalEmulatorStats {
  const now = ctx.clock.now();
  const unbilled: Record<Unbilled, number> = {
    model_error: 0,
    validation_error: 0,
    content_policy: 0,
    runner_unavailable: 0,
    cancelled: 0,
    timed_out: 0,
  };
  const billing = { billed_requests: 0, billed_images: 0, billed_megapixels: 0, cost_usd: 0, unbilled };
  const retention = {
    results_fetched: 0,
    results_deleted_unfetched: 0,
    images_downloaded: 0,
    images_deleted_undownloaded: 0,
  };
  const fetches: ResultFetch[] = [];
  for (const job of ctx.sim.values()) {
    if (job.resultFetchedAt !== undefined) retention.results_fetched++;
    if (job.resultFetchedAt !== undefined && hasImages(job))
      fetches.push({
        readyAt: job.endsAt,
        fetchedAt: job.resultFetchedAt,
        retentionMs: job.record.retentionMs,
      });
    const downloaded = ctx.downloaded.get(job.id) ?? [];
    retention.images_downloaded += downloaded.filter(Boolean).length;
    if (!job.hasEndedAt(now)) continue;
    if (job.phaseAt(now) === 'deleted' && job.resultFetchedAt === undefined)
      retention.results_deleted_unfetched++;
    if (hasImages(job) && now >= cdnExpiresAt(ctx, job))
      retention.images_deleted_undownloaded += imagePlans(job).filter(
        (plan) => !downloaded[plan.index],
      ).length;
    const reason = unbilledReason(job);
    if (reason) {
      unbilled[reason]++;
      continue;
    }
    const mp = megapixels(job);
    billing.billed_requests++;
    billing.billed_images += imagePlans(job).length;
    billing.billed_megapixels += mp;
    billing.cost_usd +=
      mp * (ctx.config.models[job.data.model] ?? ctx.config.default_model).price_per_megapixel;
  }
  billing.billed_megapixels = Math.round(billing.billed_megapixels * 1e6) / 1e6;
  billing.cost_usd = Math.round(billing.cost_usd * 1e6) / 1e6;
  const limits = ctx.sim.limits();
  return {
    requests: ctx.stats.requests(),
    requests_total: ctx.sim.size,
    phases: ctx.sim.countByPhase(now),
    peak_in_progress: ctx.sim.peakRunning(undefined, now),
    concurrency: {
      default: Number.isFinite(limits.default) ? limits.default : null,
      accounts: limits.accounts,
    },
    webhooks: { ...ctx.stats.webhooks },
    faults: ctx.stats.faults(),
    billing,
    retention: { ...retention, ready_to_fetch_share: retentionShare(fetches) },
    webhook_keys: ctx.signer.keyCount,
  };
}

const finite = (ms: number): number | null => (Number.isFinite(ms) ? ms : null);

function* groundTruth(ctx: FalContext, now: number): Generator<Record<string, unknown>> {
  for (const job of ctx.sim.values()) {
    const ended = job.hasEndedAt(now);
    yield {
      request_id: job.id,
      gateway_request_id: job.data.gatewayRequestId,
      account: job.account,
      model: job.data.model,
      prompt: job.data.input?.prompt ?? null,
      num_images: job.data.input?.numImages ?? 0,
      phase: job.phaseAt(now),
      outcome: ended ? job.outcome : null,
      submitted_at_ms: job.record.submittedAt,
      started_at_ms: job.startsAt <= now ? job.startsAt : null,
      ended_at_ms: ended ? job.endsAt : null,
      result_deleted_at_ms: ended ? finite(job.deletedAt) : null,
      cdn_expires_at_ms: ended && hasImages(job) ? finite(cdnExpiresAt(ctx, job)) : null,
      start_deadline_ms: job.record.startDeadline,
      result_fetched_at_ms: job.resultFetchedAt ?? null,
      images_downloaded: ctx.downloaded.get(job.id) ?? imagePlans(job).map(() => false),
      webhook: job.record.webhook !== null,
      runner_retries: job.data.runnerRetries,
      billed: ended && unbilledReason(job) === undefined,
    };
  }
}

const LimitsChangeSchema = z.strictObject({
  concurrency: z.number().int().min(1).nullable().optional(),
  accounts: z.record(z.string(), z.number().int().min(1).nullable()).optional(),
});

function limitsBody(ctx: FalContext): FalEmulatorStats['concurrency'] {
  const limits = ctx.sim.limits();
  return { default: Number.isFinite(limits.default) ? limits.default : null, accounts: limits.accounts };
}

/** Serves `name` (a key of ADMIN_ROUTES) for one of its methods; returns an answer to send, if any. */
export async function handleAdmin(
  ctx: FalContext,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  name: string,
): Promise<Answer | undefined> {
  switch (name) {
    case 'stats':
      return { status: 200, body: collectStats(ctx) };
    case 'requests':
      await sendNdjson(res, groundTruth(ctx, ctx.clock.now()));
      return undefined;
    case 'limits': {
      if (method === 'GET') return { status: 200, body: limitsBody(ctx) };
      const body = await readJsonBody(req);
      const parsed = LimitsChangeSchema.safeParse(body.kind === 'json' ? body.value : undefined);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
        return { status: 400, body: { detail: problems } };
      }
      const known = new Set(ctx.config.accounts.map((account) => account.id));
      const unknown = Object.keys(parsed.data.accounts ?? {}).filter((id) => !known.has(id));
      if (unknown.length > 0)
        return { status: 400, body: { detail: unknown.map((id) => `accounts.${id}: unknown account`) } };
      if (parsed.data.concurrency !== undefined) ctx.sim.setLimit(null, parsed.data.concurrency);
      for (const [account, limit] of Object.entries(parsed.data.accounts ?? {}))
        ctx.sim.setLimit(account, limit);
      return { status: 200, body: limitsBody(ctx) };
    }
    case 'webhook-keys': {
      if (method === 'POST') {
        const jwk: Jwk = ctx.signer.rotate();
        ctx.sim.recordCustom('webhook_key_rotated', { kid: jwk.kid });
      }
      return { status: 200, body: { jwks_path: JWKS_PATH, ...ctx.signer.jwks() } };
    }
    default:
      return { status: 404, body: { detail: 'Not Found' } };
  }
}
