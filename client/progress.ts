// A run's live progress: the run workflow knows finished shards, each running shard knows its own
// items, so the CLI asks both and adds them up (no workflow keeps every item's state).
import type { Client } from '@temporalio/client';
import { runProgressQuery, shardProgressQuery } from '../common/names.js';
import type { ApiCallCounts, ItemCounts, RunProgress } from '../common/types.js';
import type { RunRates } from '../governor/types.js';
import { ratesInForce } from '../temporal/governor-rates.js';
import { retryingNow, type Retrying } from './retrying.js';
import { addTotals, normalizeCounts } from '../common/item-counts.js';
import { addBatchTotals } from '../common/batch-totals.js';
import type { BatchTotals } from '../common/batch-types.js';

export interface LiveProgress {
  run: RunProgress;
  counts: ItemCounts;
  creditsSpent: number;
  /** Estimated credits the API holds for unfinished tasks (runs with a budget); absent: unknown. */
  creditsReserved?: number;
  images: number;
  apiCalls: ApiCallCounts;
  /** Tasks given up after limits.task_timeout (resubmitted or failed); absent: none. */
  tasksGivenUp?: number;
  /** Completed tasks whose images failed a check and were generated again; absent: none. */
  tasksRejected?: number;
  /** A failure Temporal is retrying now (the API unreachable, a store refusing writes). */
  retrying?: Retrying;
  /** The rates the run's calls go at, and why; absent while the governor does not answer, and in batch mode. */
  rates?: RunRates;
  /** A batch run's batches (in place of rates: its few calls skip the rate gate). */
  batches?: BatchTotals;
}

/**
 * The run's totals. Queries need a worker to answer; with none polling (an embedded run whose CLI
 * is gone) they wait, so callers that must not hang pass `deadlineMs`.
 */
export async function liveProgress(
  client: Client,
  runId: string,
  options: { deadlineMs?: number } = {},
): Promise<LiveProgress> {
  if (options.deadlineMs !== undefined) {
    const deadline = Date.now() + options.deadlineMs;
    return client.withDeadline(deadline, () => liveProgress(client, runId));
  }
  const run = await client.workflow.getHandle(runId).query(runProgressQuery);
  const counts = normalizeCounts(run.finished.counts);
  const apiCalls = { ...run.finished.apiCalls };
  let creditsSpent = run.finished.creditsSpent;
  let images = run.finished.images;
  let tasksGivenUp = run.finished.tasksGivenUp ?? 0;
  let tasksRejected = run.finished.tasksRejected ?? 0;
  let creditsReserved: number | undefined;
  const batchRun = run.submission === 'batch-file';
  let batches = batchRun ? addBatchTotals(run.finished.batches, undefined) : undefined;
  const [shards, retrying, rates] = await Promise.all([
    Promise.all(
      run.runningShards.map((id) =>
        client.workflow
          .getHandle(id)
          .query(shardProgressQuery)
          .catch(() => undefined),
      ),
    ),
    retryingNow(client, [runId, ...run.runningShards]),
    batchRun ? undefined : ratesInForce(client, run),
  ]);
  for (const shard of shards) {
    if (!shard) continue; // finished between the two queries: counted by the run next time
    addTotals(counts, normalizeCounts(shard.counts));
    addTotals(apiCalls, shard.apiCalls);
    creditsSpent += shard.creditsSpent;
    if (shard.creditsReserved !== undefined) creditsReserved = (creditsReserved ?? 0) + shard.creditsReserved;
    images += shard.images;
    tasksGivenUp += shard.tasksGivenUp ?? 0;
    tasksRejected += shard.tasksRejected ?? 0;
    if (batches && shard.batches) batches = addBatchTotals(batches, shard.batches);
  }
  // Items of shards not started yet are queued.
  const known = Object.values(counts).reduce((sum, n) => sum + n, 0);
  counts.queued += Math.max(0, run.itemCount - known);
  return {
    run,
    counts,
    creditsSpent,
    ...(creditsReserved ? { creditsReserved } : {}),
    images,
    apiCalls,
    ...(tasksGivenUp > 0 ? { tasksGivenUp } : {}),
    ...(tasksRejected > 0 ? { tasksRejected } : {}),
    ...(retrying ? { retrying } : {}),
    ...(rates ? { rates } : {}),
    ...(batches ? { batches } : {}),
  };
}
