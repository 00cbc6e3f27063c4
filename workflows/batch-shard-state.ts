// What a batch shard (batch-shard.ts) knows of its items, and the decisions it takes from a
// round's outcomes, pure and unit-tested: which items are final (completed, failed, expired,
// cancelled) and which go to the next round under the retry policy; what a batch that ended
// without a line for an item means (expired, cancelled, completed without it); a batch whose every
// request failed. Carried over continue-as-new as plain data.
import type { BatchItem, BatchStatusOutput, CollectedOutcome } from '../common/batch-types.js';
import { FailureType } from '../common/failure-types.js';
import { zeroApiCalls, zeroCounts } from '../common/item-counts.js';
import type {
  ApiCallCounts,
  ErrorSummary,
  ItemCounts,
  ItemStatus,
  RecordOutcomesInput,
  ShardLimits,
} from '../common/types.js';
import { deadlineError, shouldResubmit } from './tracking.js';

/** The states after which a batch changes no more. */
export const TERMINAL_BATCH_STATES: ReadonlySet<string> = new Set([
  'completed',
  'failed',
  'expired',
  'cancelled',
]);

export interface BatchShardState {
  /** The round in flight or next (1 for the first batch). */
  round: number;
  /** The round's batch, once created (until it is collected). */
  batchId?: string;
  /** The items of the round in flight (shard positions). */
  inRound: number[];
  /** Per item (shard position): attempts sent so far. */
  attempts: number[];
  /** Per item: its final status, or null while open. */
  final: (ItemStatus | null)[];
  /** Per item: what it cost (all its attempts). */
  credits: number[];
  images: number;
  apiCalls: ApiCallCounts;
  /** Final outcomes not yet recorded (recordOutcomes): those without stored images. */
  outcomes: RecordOutcomesInput['outcomes'];
  /** The wait before the next status call. */
  pollMs: number;
  paused: boolean;
  cancelled: boolean;
  deadlinePassed: boolean;
  /** Set once pixelmill asked the round's batch to stop (cancel, deadline, task_timeout). */
  cancelAsked?: 'cancel' | 'deadline' | 'task_timeout';
  /** When the round's batch was created (workflow time, ms): its task_timeout's origin. */
  createdAt?: number;
  handedOff: boolean;
  /** Why the shard ended short of completing everything it could (a batch whose every request failed). */
  stopReason?: string;
  /** Items given up at task_timeout. */
  givenUp: number;
  /** Per item: its estimated credits (planShard), loaded at the first round when the shard has an allowance. */
  estimates?: number[];
  /** The same at sync rates, for a batch run's retry rounds in sync (`api.retry_in: sync`). */
  syncEstimates?: number[];
  /** Set once a round was cut to what the allowance left (the rest ended as skipped). */
  budgetStopped?: boolean;
  /** The shard's batches that have ended, by how (absent before the first). */
  batchesEnded?: Partial<Record<EndedBatch, number>>;
  /** The round's batch as its last status call saw it. */
  lastPoll?: BatchStatusOutput;
  /** The images the round's batch asks for (its items' `n`). */
  roundImages?: number;
  /** When the round's batch is polled next (workflow time, ms). */
  nextPollAt?: number;
}

/** How a batch ends. */
export type EndedBatch = 'completed' | 'expired' | 'failed' | 'cancelled';

export function freshBatchState(
  count: number,
  pollMs: number,
  paused: boolean,
  cancelled: boolean,
): BatchShardState {
  return {
    round: 1,
    inRound: [],
    attempts: new Array<number>(count).fill(0),
    final: new Array<ItemStatus | null>(count).fill(null),
    credits: new Array<number>(count).fill(0),
    images: 0,
    apiCalls: zeroApiCalls(),
    outcomes: [],
    pollMs,
    paused,
    cancelled,
    deadlinePassed: false,
    handedOff: false,
    givenUp: 0,
  };
}

/** Open items (not final and not in a round): what the next round sends. */
export function openItems(s: BatchShardState): number[] {
  const inRound = new Set(s.inRound);
  return s.final.flatMap((status, k) => (status === null && !inRound.has(k) ? [k] : []));
}

/** The round's items as the activities take them (the first `fit` open ones), and each one's attempt counted. */
export function startRound(
  s: BatchShardState,
  planIndexOf: (k: number) => number,
  fit = Infinity,
): BatchItem[] {
  s.inRound = openItems(s).slice(0, fit);
  return s.inRound.map((k) => ({ index: planIndexOf(k), attempt: ++s.attempts[k]! }));
}

/**
 * Polling: each wait half as long again, up to `maxMs` (BatchLimits.maxPollMs; a run started
 * without one: 20 times the first, at most 10 minutes).
 */
export function nextPollMs(
  pollMs: number,
  firstMs: number,
  maxMs = Math.max(firstMs, Math.min(20 * firstMs, 10 * 60_000)),
): number {
  return Math.min(Math.round(pollMs * 1.5), maxMs);
}

/** Why an item has no line in its batch's files, by how the batch ended. */
export function missingError(
  batch: BatchStatusOutput,
  cancelAsked: BatchShardState['cancelAsked'],
): ErrorSummary {
  if (batch.status === 'failed' && batch.failure) return batch.failure;
  if (batch.status === 'expired')
    return {
      type: 'task_expired',
      code: 'batch_expired',
      message: 'the batch reached the end of its 24-hour window before this request ran',
    };
  if (batch.status === 'cancelled' && cancelAsked === undefined)
    return {
      type: 'task_expired',
      code: 'batch_cancelled',
      message: 'the batch was cancelled (not by pixelmill) before this request ran',
    };
  if (batch.status === 'cancelled')
    return {
      type: 'cancelled',
      code: cancelAsked!,
      message: `the batch was cancelled (${cancelAsked}) before this request ran`,
    };
  return {
    type: 'generation_error',
    code: 'no_result_line',
    message: `the batch ${batch.status} without a line for this request in its output or error file`,
  };
}

/** Applies a collected round: each item final or open again; the outcomes to record. */
export function applyRound(
  s: BatchShardState,
  round: { items: BatchItem[]; outcomes: CollectedOutcome[]; batch: BatchStatusOutput; images: number },
  retry: ShardLimits['retry'],
  deadlineAt: number | undefined,
): void {
  const failures: ErrorSummary[] = [];
  s.images += round.images;
  round.outcomes.forEach((outcome, j) => {
    const k = s.inRound[j]!;
    const item = round.items[j]!;
    if (outcome.s === 'completed') {
      s.credits[k]! += outcome.cost;
      s.final[k] = 'completed';
      return;
    }
    const error = outcome.s === 'failed' ? outcome.error : missingError(round.batch, s.cancelAsked);
    const taskId = outcome.s === 'failed' ? outcome.taskId : null;
    if (outcome.s === 'failed') {
      s.credits[k]! += outcome.cost;
      failures.push(outcome.error);
    }
    const stopped = s.cancelAsked !== undefined && s.cancelAsked !== 'task_timeout';
    if (!stopped && shouldResubmit(error, item.attempt, retry)) return;
    const status = finalStatus(error, stopped ? s.cancelAsked : undefined);
    const finalError =
      status === 'cancelled' && s.cancelAsked === 'deadline' && deadlineAt !== undefined
        ? deadlineError(deadlineAt)
        : error;
    s.final[k] = status;
    s.outcomes.push({
      index: item.index,
      status,
      taskId,
      attempts: item.attempt,
      creditsCost: s.credits[k]!,
      error: finalError,
    });
  });
  if (failures.length > 0 && failures.length === round.outcomes.length) {
    const first = failures[0]!;
    s.stopReason = `every request of round ${s.round}'s batch failed: ${first.code}: ${first.message}`;
  }
  if (s.batchId !== undefined && TERMINAL_BATCH_STATES.has(round.batch.status)) {
    const ended = round.batch.status as EndedBatch;
    (s.batchesEnded ??= {})[ended] = (s.batchesEnded[ended] ?? 0) + 1;
  }
  s.inRound = [];
  delete s.batchId;
  delete s.createdAt;
  delete s.cancelAsked;
  delete s.lastPoll;
  delete s.roundImages;
  delete s.nextPollAt;
  s.round++;
}

function finalStatus(error: ErrorSummary, stopped: BatchShardState['cancelAsked']): ItemStatus {
  if (stopped !== undefined || error.type === 'cancelled') return 'cancelled';
  return error.type === 'task_expired' ? 'expired' : 'failed';
}

/** Items never sent when the shard stops (cancel, deadline, budget): final as cancelled. */
export function endOpen(s: BatchShardState, planIndexOf: (k: number) => number, error: ErrorSummary): number {
  let ended = 0;
  for (const k of openItems(s)) {
    s.final[k] = 'cancelled';
    s.outcomes.push({
      index: planIndexOf(k),
      status: 'cancelled',
      taskId: null,
      attempts: s.attempts[k]!,
      creditsCost: s.credits[k]!,
      error,
    });
    ended++;
  }
  return ended;
}

/**
 * How many of the open items (in order) the next round may send within `allowance` credits: what
 * was charged so far (every attempt's cost) plus each one's estimate, as shardWorkflow's
 * nextWouldExceed counts. A round runs alone, so nothing else is committed meanwhile.
 */
export function itemsWithinAllowance(
  s: BatchShardState,
  allowance: number,
  estimates: readonly number[] | undefined = s.estimates,
): number {
  let committed = s.credits.reduce((sum, c) => sum + c, 0);
  let fit = 0;
  for (const k of openItems(s)) {
    committed += estimates?.[k] ?? 0;
    // A thousandth of a cent of float error never cuts an item that fits exactly.
    if (committed > allowance + 1e-9) break;
    fit++;
  }
  return fit;
}

/** Open items past the allowance: final as skipped (budget_exhausted), as the task shards end them. */
export function endOverBudget(s: BatchShardState, planIndexOf: (k: number) => number, fit: number): number {
  const over = openItems(s).slice(fit);
  for (const k of over) {
    s.final[k] = 'skipped';
    s.outcomes.push({
      index: planIndexOf(k),
      status: 'skipped',
      taskId: null,
      attempts: s.attempts[k]!,
      creditsCost: s.credits[k]!,
      error: {
        type: FailureType.BudgetExhausted,
        code: 'budget_exhausted',
        message: "submitting it would exceed the run's budget_credits",
      },
    });
  }
  if (over.length > 0) s.budgetStopped = true;
  return over.length;
}

/** Items by where they are, as the run counts them. */
export function batchCounts(s: BatchShardState): ItemCounts {
  const counts = zeroCounts();
  const inRound = new Set(s.inRound);
  s.final.forEach((status, k) => {
    if (status !== null) counts[status]++;
    else if (inRound.has(k)) counts[s.batchId ? 'processing' : 'queued']++;
    else counts.queued++;
  });
  return counts;
}

export function creditsOf(s: BatchShardState): number {
  return Math.round(s.credits.reduce((sum, c) => sum + c, 0) * 1e6) / 1e6;
}
