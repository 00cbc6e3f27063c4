// What a batch shard decides from the clock and its state alone: whether the deadline or the
// batch's task_timeout has come, how long its waits may last, why a batch is to be cancelled, and
// the progress and result it tells its run (with its batches, in batch mode). Pure (the time is an argument), so unit-tested without
// a server; batch-shard.ts passes Date.now(), which the workflow sandbox makes deterministic.
import type { BatchTotals } from '../common/batch-types.js';
import type { ShardLimits, ShardProgress, ShardResult } from '../common/types.js';
import { zeroBatchTotals } from '../common/batch-totals.js';
import { batchCounts, creditsOf, type BatchShardState, type EndedBatch } from './batch-shard-state.js';

type Limits = Pick<ShardLimits, 'deadlineAt' | 'taskTimeoutMs'>;
type BatchMode = Pick<ShardLimits, 'submission' | 'batch'>;

export function deadlineDue(limits: Limits, nowMs: number): boolean {
  return limits.deadlineAt !== undefined && nowMs >= limits.deadlineAt;
}

/** The round's batch has outlived task_timeout since it was created. */
export function timedOut(limits: Limits, s: Pick<BatchShardState, 'createdAt'>, nowMs: number): boolean {
  return (
    limits.taskTimeoutMs !== undefined &&
    s.createdAt !== undefined &&
    nowMs >= s.createdAt + limits.taskTimeoutMs
  );
}

/** Until the deadline (none: undefined, no limit on the wait). */
export function msToDeadline(limits: Limits, nowMs: number): number | undefined {
  return limits.deadlineAt === undefined ? undefined : Math.max(1, limits.deadlineAt - nowMs);
}

/** Until the deadline or the batch's task_timeout, whichever is first. */
export function msToStop(limits: Limits, s: Pick<BatchShardState, 'createdAt'>, nowMs: number): number {
  const stops = [
    limits.deadlineAt,
    limits.taskTimeoutMs !== undefined && s.createdAt !== undefined
      ? s.createdAt + limits.taskTimeoutMs
      : undefined,
  ].filter((at): at is number => at !== undefined);
  return stops.length === 0 ? Infinity : Math.max(1, Math.min(...stops) - nowMs);
}

/** Why the round's batch is to be cancelled now, if it is. */
export function cancelReason(
  limits: Limits,
  s: Pick<BatchShardState, 'cancelled' | 'createdAt'>,
  nowMs: number,
): 'cancel' | 'deadline' | 'task_timeout' | undefined {
  if (s.cancelled) return 'cancel';
  if (deadlineDue(limits, nowMs)) return 'deadline';
  return timedOut(limits, s, nowMs) ? 'task_timeout' : undefined;
}

/**
 * The shard's batches (BatchTotals): those ended, and the round's in flight with its requests by
 * state (its last status call's counts; before one, all waiting), its images against the run's
 * enqueued limit, and when it is polled next.
 */
export function shardBatches(s: BatchShardState, enqueuedLimit: number | undefined): BatchTotals {
  const totals = zeroBatchTotals();
  for (const [status, count] of Object.entries(s.batchesEnded ?? {})) totals[status as EndedBatch] = count;
  if (enqueuedLimit !== undefined) totals.enqueuedLimit = enqueuedLimit;
  if (s.batchId === undefined) return totals;
  totals.inFlight = 1;
  const completed = s.lastPoll?.completed ?? 0;
  const failed = s.lastPoll?.failed ?? 0;
  const requests = s.lastPoll?.total || s.inRound.length;
  totals.requests = { waiting: Math.max(0, requests - completed - failed), completed, failed };
  totals.enqueuedImages = s.roundImages ?? s.inRound.length;
  if (s.nextPollAt !== undefined) totals.nextPollAt = new Date(s.nextPollAt).toISOString();
  return totals;
}

/** The shard's batches, when it sends batch files (sync mode has none to tell). */
function batchesOf(s: BatchShardState, limits: BatchMode): { batches?: BatchTotals } {
  return limits.submission === 'batch-file' ? { batches: shardBatches(s, limits.batch?.enqueuedImages) } : {};
}

export function batchProgress(s: BatchShardState, shard: number, limits: BatchMode): ShardProgress {
  return {
    shard,
    counts: batchCounts(s),
    creditsSpent: creditsOf(s),
    apiCalls: { ...s.apiCalls },
    images: s.images,
    paused: s.paused,
    cancelled: s.cancelled,
    ...(s.givenUp > 0 ? { tasksGivenUp: s.givenUp } : {}),
    ...batchesOf(s, limits),
  };
}

/** The shard's result once no round is left; `endedByDeadline` items ended unsent by the deadline. */
export function batchResult(
  s: BatchShardState,
  shard: number,
  stopCode: string | undefined,
  endedByDeadline: number,
  limits: BatchMode = {},
): ShardResult {
  const result: ShardResult = {
    shard,
    counts: batchCounts(s),
    creditsSpent: creditsOf(s),
    apiCalls: { ...s.apiCalls },
    images: s.images,
    ...batchesOf(s, limits),
  };
  const stopReason = s.stopReason ?? (s.budgetStopped ? 'budget exhausted' : undefined);
  if (stopReason !== undefined) result.stopReason = stopReason;
  if (stopCode === 'deadline' && endedByDeadline > 0) result.endedByDeadline = endedByDeadline;
  if (s.givenUp > 0) result.tasksGivenUp = s.givenUp;
  return result;
}
