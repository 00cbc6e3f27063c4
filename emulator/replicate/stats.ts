// What the Replicate emulator observed, for tests and benchmarks (/_emulator/stats), and its
// ground truth, one line a prediction (/_emulator/predictions): enough to audit a client run
// (prompts submitted twice, peak of predictions processing at once, output files removed before
// anyone downloaded them and how close to it the rest were downloaded, what was billed and what
// was not).
import { retentionShare, type ResultFetch, type RetentionShare } from '../core/stats.js';
import type { ReplicateContext } from './context.js';
import type { Prediction } from './predictions.js';
import { STATUSES, type PredictionStatus } from './wire.js';

export interface ReplicateStats {
  /** `{ "<METHOD> <route pattern>": { "<HTTP status>": count } }` */
  requests: Record<string, Record<string, number>>;
  predictions: Record<PredictionStatus, number>;
  predictions_total: number;
  /** Predictions whose input, output and files retention has removed. */
  data_removed: number;
  /** The most predictions processing at one instant so far. */
  peak_processing: number;
  webhooks: Record<string, number>;
  /** Faults injected, by name (server_error_<class>, lost_create_response, truncated_download...). */
  faults: Record<string, number>;
  billing: {
    billed_usd: number;
    billed_predictions: number;
    /** Aborted by their deadline before starting: never billed. */
    aborted_unbilled: number;
    /** Canceled before they started: never billed. */
    canceled_before_start_unbilled: number;
    /** Each account's credit now. */
    credit_usd: Record<string, number>;
  };
  outputs: {
    /** Output files of succeeded predictions. */
    files: number;
    /** Of those, downloaded completely at least once. */
    downloaded: number;
    /** Removed by retention before any complete download. */
    deleted_before_download: number;
    /**
     * Succeeded predictions whose every output was downloaded: from completion to the last of
     * those first downloads, over the time until retention removes the files.
     */
    ready_to_fetch_share: RetentionShare;
  };
}

export interface GroundTruthPrediction {
  id: string;
  account: string;
  model: string;
  prompt: string;
  status: PredictionStatus;
  created_at_ms: number;
  started_at_ms: number | null;
  completed_at_ms: number | null;
  deadline_at_ms: number | null;
  removed_at_ms: number | null;
  data_removed: boolean;
  /** What cut its run short: nothing (natural), the 30-minute timeout, or its deadline. */
  end_reason: string;
  stuck: boolean;
  outputs: number;
  downloaded: number;
  /** When its last output was first downloaded whole: the result in the client's hands. */
  result_fetched_at_ms: number | null;
  deleted_before_download: number;
  billed_usd: number;
}

const round = (usd: number): number => Math.round(usd * 1e6) / 1e6;

export function groundTruth(ctx: ReplicateContext, job: Prediction, now: number): GroundTruthPrediction {
  const { store } = ctx;
  const state = store.stateAt(job, now);
  const removedAt = store.removedAt(job);
  const removed = now >= removedAt;
  const outputs = state.hasOutput ? job.data.plan.count : 0;
  const downloaded = store.downloadedCount(job);
  return {
    id: job.id,
    account: job.account,
    model: job.data.model,
    prompt: job.data.plan.prompt,
    status: state.status,
    created_at_ms: job.record.submittedAt,
    started_at_ms: state.startedAt,
    completed_at_ms: state.completedAt,
    deadline_at_ms: job.data.deadlineAt,
    removed_at_ms: Number.isFinite(removedAt) ? removedAt : null,
    data_removed: removed,
    end_reason: job.data.endReason,
    stuck: job.outcome === 'stuck',
    outputs,
    downloaded,
    result_fetched_at_ms: job.resultFetchedAt ?? null,
    deleted_before_download: removed ? Math.max(0, outputs - downloaded) : 0,
    billed_usd: round(store.costOf(job, now)),
  };
}

export function collectStats(ctx: ReplicateContext): ReplicateStats {
  const now = ctx.clock.now();
  const predictions = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<PredictionStatus, number>;
  const billing = {
    billed_usd: 0,
    billed_predictions: 0,
    aborted_unbilled: 0,
    canceled_before_start_unbilled: 0,
    credit_usd: {} as Record<string, number>,
  };
  const outputs = { files: 0, downloaded: 0, deleted_before_download: 0 };
  const fetches: ResultFetch[] = [];
  let dataRemoved = 0;
  for (const job of ctx.store.values()) {
    const truth = groundTruth(ctx, job, now);
    if (truth.status === 'succeeded' && job.resultFetchedAt !== undefined)
      fetches.push({
        readyAt: job.endsAt,
        fetchedAt: job.resultFetchedAt,
        retentionMs: ctx.store.removedAt(job) - job.endsAt,
      });
    predictions[truth.status]++;
    if (truth.data_removed) dataRemoved++;
    if (truth.billed_usd > 0) {
      billing.billed_usd += truth.billed_usd;
      billing.billed_predictions++;
    }
    if (truth.status === 'aborted') billing.aborted_unbilled++;
    if (truth.status === 'canceled' && truth.started_at_ms === null) billing.canceled_before_start_unbilled++;
    outputs.files += truth.outputs;
    outputs.downloaded += truth.downloaded;
    outputs.deleted_before_download += truth.deleted_before_download;
  }
  billing.billed_usd = round(billing.billed_usd);
  for (const username of ctx.accounts.keys())
    billing.credit_usd[username] = round(ctx.store.balance(username, now));
  return {
    requests: ctx.stats.requests(),
    predictions,
    predictions_total: ctx.store.values().length,
    data_removed: dataRemoved,
    peak_processing: ctx.store.jobs.peakRunning(undefined, now),
    webhooks: { ...ctx.stats.webhooks },
    faults: ctx.stats.faults(),
    billing,
    outputs: { ...outputs, ready_to_fetch_share: retentionShare(fetches) },
  };
}
