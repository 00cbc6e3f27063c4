// The batch shard workflow: a shard's items (up to SHARD_SIZE) through a provider that takes batch
// files (OpenAI's Batch API) or held calls (its sync mode), started by the run's shard pool in
// place of shardWorkflow with the same ShardInput, and ending the same way (shardFinishedSignal
// with a ShardResult, outcome lines in the run's store), so that run totals, status, the report
// and the UI need nothing of their own. The rounds are batch-shard-rounds.ts's, the decisions
// batch-shard-state.ts's.
import {
  CancellationScope,
  condition,
  continueAsNew,
  setHandler,
  TemporalFailure,
} from '@temporalio/workflow';
import {
  cancelSignal,
  pauseSignal,
  resumeSignal,
  shardFinishedSignal,
  shardProgressQuery,
  taskQueuesOf,
} from '../common/names.js';
import { zeroCounts } from '../common/item-counts.js';
import type { ShardInput, ShardResult } from '../common/types.js';
import { batchActivitiesOn } from './activities.js';
import { endOpen, freshBatchState, openItems, type BatchShardState } from './batch-shard-state.js';
import { historyFull, tellRun } from './shard-context.js';
import { deadlineError } from './tracking.js';
import { batchResult, msToDeadline } from './batch-shard-clock.js';
import {
  collectRound,
  deadlineDue,
  heldCallRound,
  pollUntilEnded,
  progressOf,
  recordFinished,
  roundWithinBudget,
  submitRound,
  type BatchShard,
} from './batch-shard-rounds.js';

/** The shard's input: a ShardInput, and its own state when it continued as new. */
export type BatchShardInput = ShardInput & { batchState?: BatchShardState };

const DEFAULT_POLL_MS = 30_000;

/**
 * One batch per round: the round's items are uploaded as one file and a batch is created for it
 * (or found by its metadata after a lost answer), polled with growing waits, and when it ends its
 * output and error files are collected (every finished image stored, even from an expired or
 * cancelled batch); the items not finished go to the next round under the retry policy, in a new
 * batch or as held calls (`api.retry_in`). Durable: every call is an activity, the state is plain
 * arrays carried over continue-as-new (a batch polled for a day keeps its history short), and the
 * collect resumes at its byte offset. Pause stops new rounds; cancel, the deadline and
 * task_timeout cancel the batch at OpenAI and keep what finished.
 */
export async function batchShardWorkflow(input: BatchShardInput): Promise<ShardResult> {
  let result: ShardResult;
  try {
    result = await workBatchShard(input);
  } catch (error) {
    if (error instanceof TemporalFailure) {
      const failure = `shard ${input.shard.index + 1} ended: ${error.message}${error.cause ? `: ${error.cause.message}` : ''}`;
      await CancellationScope.nonCancellable(() =>
        tellRun(input, shardFinishedSignal, {
          shard: input.shard.index,
          counts: zeroCounts(),
          creditsSpent: 0,
          apiCalls: { submit: 0, lookup: 0, get: 0 },
          images: 0,
          failure,
        }),
      );
    }
    throw error;
  }
  await tellRun(input, shardFinishedSignal, result);
  return result;
}

async function workBatchShard(input: BatchShardInput): Promise<ShardResult> {
  const { shard, limits } = input;
  const firstPollMs = limits.batch?.pollMs ?? DEFAULT_POLL_MS;
  const s = input.batchState ?? freshBatchState(shard.count, firstPollMs, input.paused, input.cancelled);
  const ctx: BatchShard = {
    input,
    s,
    a: batchActivitiesOn(taskQueuesOf(input.apiAccount), input.governed),
    firstPollMs,
    indexOf: (k) => shard.indices?.[k] ?? shard.offset + k,
  };
  setHandler(shardProgressQuery, () => progressOf(ctx));
  setHandler(pauseSignal, () => void (s.paused = true));
  setHandler(resumeSignal, () => void (s.paused = false));
  setHandler(cancelSignal, () => void (s.cancelled = true));

  for (;;) {
    if (deadlineDue(ctx)) s.deadlinePassed = true;
    if (s.batchId !== undefined) {
      const batch = await pollUntilEnded(ctx);
      if (batch === undefined) return carryOn(ctx);
      await collectRound(ctx, batch);
      continue;
    }
    if (openItems(s).length === 0 || s.cancelled || s.deadlinePassed) break;
    if (s.paused) {
      await condition(() => !s.paused || s.cancelled, msToDeadline(limits, Date.now()));
      continue;
    }
    if (historyFull(limits)) return carryOn(ctx);
    const sync = limits.submission === 'held-call' || (s.round > 1 && limits.batch?.retryIn === 'sync');
    const fit = await roundWithinBudget(ctx, sync);
    if (fit === 0) break;
    if (sync) await heldCallRound(ctx, fit);
    else await submitRound(ctx, fit);
  }

  const stop = s.cancelled
    ? { type: 'cancelled', code: 'cancelled', message: 'the run was cancelled before this item was sent' }
    : s.deadlinePassed && limits.deadlineAt !== undefined
      ? deadlineError(limits.deadlineAt)
      : undefined;
  const endedByDeadline = stop ? endOpen(s, ctx.indexOf, stop) : 0;
  await recordFinished(ctx);
  return batchResult(s, shard.index, stop?.code, endedByDeadline, limits);
}

function carryOn(ctx: BatchShard): Promise<never> {
  return continueAsNew<typeof batchShardWorkflow>({
    ...ctx.input,
    paused: ctx.s.paused,
    cancelled: ctx.s.cancelled,
    batchState: ctx.s,
  });
}
