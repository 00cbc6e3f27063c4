// The batch shard workflow: a shard's items (up to SHARD_SIZE) through a provider that takes batch
// files (OpenAI's Batch API) or held calls (its sync mode), started by the run's shard pool in
// place of shardWorkflow with the same ShardInput, and ending the same way (shardFinishedSignal
// with a ShardResult, outcome lines in the run's store), so that run totals, status, the report
// and the UI need nothing of their own. The decisions are batch-shard-state.ts's.
import {
  CancellationScope,
  condition,
  continueAsNew,
  setHandler,
  TemporalFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchItem, BatchStatusOutput, CollectedOutcome } from '../common/batch-types.js';
import {
  cancelSignal,
  pauseSignal,
  resumeSignal,
  shardFinishedSignal,
  shardProgressQuery,
  shardProgressSignal,
  shardSubmittedSignal,
  taskQueuesOf,
} from '../common/names.js';
import { zeroCounts } from '../common/item-counts.js';
import type { ShardInput, ShardProgress, ShardResult } from '../common/types.js';
import { batchActivitiesOn, type BatchActivitiesOn } from './activities.js';
import {
  applyRound,
  endOpen,
  endOverBudget,
  freshBatchState,
  itemsWithinAllowance,
  nextPollMs,
  openItems,
  startRound,
  TERMINAL_BATCH_STATES,
  type BatchShardState,
} from './batch-shard-state.js';
import { historyFull, tellRun } from './shard-context.js';
import { deadlineError } from './tracking.js';
import {
  batchProgress,
  batchResult,
  cancelReason,
  deadlineDue as isDeadlineDue,
  msToDeadline,
  msToStop,
} from './batch-shard-clock.js';

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

interface BatchShard {
  input: BatchShardInput;
  s: BatchShardState;
  a: BatchActivitiesOn;
  firstPollMs: number;
  indexOf: (k: number) => number;
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
    const fit = await roundWithinBudget(ctx);
    if (fit === 0) break;
    const sync = limits.submission === 'held-call' || (s.round > 1 && limits.batch?.retryIn === 'sync');
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
  return batchResult(s, shard.index, stop?.code, endedByDeadline);
}

/**
 * Under a budget (the shard's allowance), how many open items the next round may send: never a
 * batch whose estimated cost would pass the allowance. The items past it end as skipped
 * (budget_exhausted) and the shard's result says 'budget exhausted'. Without a budget: all of them.
 */
async function roundWithinBudget(ctx: BatchShard): Promise<number> {
  const { s, input, a } = ctx;
  const { allowance } = input.limits;
  if (allowance === undefined) return Infinity;
  if (s.estimates === undefined) {
    const { offset, count, indices } = input.shard;
    s.estimates = (
      await a.planShard({ plan: input.plan, offset, count, ...(indices ? { indices } : {}) })
    ).credits;
  }
  const fit = itemsWithinAllowance(s, allowance);
  if (endOverBudget(s, ctx.indexOf, fit) > 0) await recordFinished(ctx);
  return fit;
}

/** A new batch for the first `fit` open items; the run is told once that the shard holds what it will. */
async function submitRound(ctx: BatchShard, fit: number): Promise<void> {
  const { s, input, a } = ctx;
  const items = startRound(s, ctx.indexOf, fit);
  const submitted = await a.openaiBatchSubmit({
    plan: input.plan,
    runId: input.runId,
    shard: input.shard.index,
    round: s.round,
    items,
  });
  s.apiCalls.submit += submitted.calls;
  s.batchId = submitted.batchId;
  s.createdAt = Date.now();
  s.pollMs = ctx.firstPollMs;
  if (!s.handedOff && input.limits.handOff) {
    s.handedOff = true;
    const holding = s.final.filter((status) => status === null).length;
    await tellRun(input, shardSubmittedSignal, { workflowId: workflowInfo().workflowId, holding });
  }
}

/**
 * Polls the round's batch with growing waits until it ends; undefined when the history is full
 * (the caller continues as new, the batch still polled there). Cancel, the deadline and
 * task_timeout ask OpenAI to cancel it once, then wait for it to say so.
 */
async function pollUntilEnded(ctx: BatchShard): Promise<BatchStatusOutput | undefined> {
  const { s, input, a } = ctx;
  const ref = { plan: input.plan, batchId: s.batchId! };
  for (;;) {
    const why = cancelReason(input.limits, s, Date.now());
    if (why !== undefined && s.cancelAsked === undefined) {
      s.cancelAsked = why;
      if (why === 'deadline') s.deadlinePassed = true;
      if (why === 'task_timeout') s.givenUp += s.inRound.length;
      s.apiCalls.lookup++;
      const batch = await a.openaiBatchCancel(ref);
      if (TERMINAL_BATCH_STATES.has(batch.status)) return batch;
      s.pollMs = ctx.firstPollMs;
    }
    const stopAt =
      s.cancelAsked === undefined ? Math.min(s.pollMs, msToStop(input.limits, s, Date.now())) : s.pollMs;
    await condition(() => s.cancelled && s.cancelAsked === undefined, Math.max(1, stopAt));
    s.apiCalls.lookup++;
    const batch = await a.openaiBatchStatus(ref);
    if (TERMINAL_BATCH_STATES.has(batch.status)) return batch;
    s.pollMs = nextPollMs(s.pollMs, ctx.firstPollMs);
    if (historyFull(input.limits)) return undefined;
  }
}

/** The ended batch's results stored, each item final or open again; the run told. */
async function collectRound(ctx: BatchShard, batch: BatchStatusOutput): Promise<void> {
  const { s, input, a } = ctx;
  const items = roundItems(ctx);
  const collected = await a.openaiBatchCollect({
    plan: input.plan,
    shard: input.shard.index,
    batchId: s.batchId!,
    items,
    mode: 'batch',
  });
  s.apiCalls.get += collected.calls;
  applyRound(
    s,
    { items, outcomes: collected.outcomes, batch, images: collected.images },
    input.limits.retry,
    input.limits.deadlineAt,
  );
  await recordFinished(ctx);
}

/** Sync mode (or a retry in sync): each open item (the first `fit`) one held call, at most max_in_flight at once. */
async function heldCallRound(ctx: BatchShard, fit: number): Promise<void> {
  const { s, input, a } = ctx;
  const items = startRound(s, ctx.indexOf, fit);
  const outcomes: CollectedOutcome[] = new Array(items.length);
  let next = 0;
  let images = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length && !s.cancelled && !deadlineDue(ctx)) {
      const j = next++;
      const item = items[j]!;
      const { calls, ...outcome } = await a.openaiGenerate({
        plan: input.plan,
        shard: input.shard.index,
        ...item,
      });
      s.apiCalls.submit += calls;
      outcomes[j] = outcome as CollectedOutcome;
      if (outcome.s !== 'missing') images += outcome.images ?? 0;
    }
  };
  const lanes = Math.max(1, Math.min(input.limits.maxInFlight, items.length));
  await Promise.all(Array.from({ length: lanes }, lane));
  for (let j = 0; j < items.length; j++) outcomes[j] ??= { s: 'missing' };
  const stopped = s.cancelled ? 'cancel' : deadlineDue(ctx) ? 'deadline' : undefined;
  if (stopped) s.cancelAsked = stopped;
  applyRound(
    s,
    { items, outcomes, batch: { status: stopped ? 'cancelled' : 'completed' }, images },
    input.limits.retry,
    input.limits.deadlineAt,
  );
  await recordFinished(ctx);
}

function roundItems(ctx: BatchShard): BatchItem[] {
  return ctx.s.inRound.map((k) => ({ index: ctx.indexOf(k), attempt: ctx.s.attempts[k]! }));
}

async function recordFinished(ctx: BatchShard): Promise<void> {
  const { s, input, a } = ctx;
  if (s.outcomes.length > 0)
    await a.recordOutcomes({ plan: input.plan, shard: input.shard.index, outcomes: s.outcomes.splice(0) });
  await tellRun(input, shardProgressSignal, progressOf(ctx));
}

function progressOf(ctx: BatchShard): ShardProgress {
  return batchProgress(ctx.s, ctx.input.shard.index);
}

function deadlineDue(ctx: BatchShard): boolean {
  return isDeadlineDue(ctx.input.limits, Date.now());
}

function carryOn(ctx: BatchShard): Promise<never> {
  return continueAsNew<typeof batchShardWorkflow>({
    ...ctx.input,
    paused: ctx.s.paused,
    cancelled: ctx.s.cancelled,
    batchState: ctx.s,
  });
}
