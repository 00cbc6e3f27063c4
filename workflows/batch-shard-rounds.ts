// The rounds of a batch shard (batch-shard.ts): each a budget check, then a batch submitted,
// polled with growing waits and collected, or (sync mode, a retry in sync) held calls; what each
// tells the run. Workflow code: every call an activity, every decision batch-shard-state.ts's.
import { condition, setCurrentDetails, upsertMemo, workflowInfo } from '@temporalio/workflow';
import { describeBatches } from '../common/batch-totals.js';
import type { BatchItem, BatchStatusOutput, CollectedOutcome } from '../common/batch-types.js';
import { shardProgressSignal, shardSubmittedSignal } from '../common/names.js';
import type { ShardProgress } from '../common/types.js';
import type { BatchActivitiesOn } from './activities.js';
import {
  applyRound,
  endOverBudget,
  itemsWithinAllowance,
  nextPollMs,
  startRound,
  TERMINAL_BATCH_STATES,
  type BatchShardState,
} from './batch-shard-state.js';
import { batchProgress, cancelReason, deadlineDue as isDeadlineDue, msToStop } from './batch-shard-clock.js';
import { historyFull, tellRun } from './shard-context.js';
import type { BatchShardInput } from './batch-shard.js';

/** What every round works on: the shard's input and state, its activities, its poll pacing. */
export interface BatchShard {
  input: BatchShardInput;
  s: BatchShardState;
  a: BatchActivitiesOn;
  firstPollMs: number;
  indexOf: (k: number) => number;
}

/**
 * Under a budget (the shard's allowance), how many open items the next round may send: never a
 * round whose estimated cost (each item at the round's rates) would pass the allowance. The items
 * past it end as skipped (budget_exhausted) and the shard's result says 'budget exhausted'.
 * Without a budget: all of them.
 */
export async function roundWithinBudget(ctx: BatchShard, sync: boolean): Promise<number> {
  const { s, input, a } = ctx;
  const { allowance } = input.limits;
  if (allowance === undefined) return Infinity;
  const retryInSync = sync && input.limits.submission === 'batch-file';
  const key = retryInSync ? 'syncEstimates' : 'estimates';
  const { offset, count, indices } = input.shard;
  s[key] ??= (
    await a.planShard({
      plan: input.plan,
      offset,
      count,
      ...(indices ? { indices } : {}),
      ...(retryInSync ? { mode: 'sync' } : {}),
    })
  ).credits;
  const fit = itemsWithinAllowance(s, allowance, s[key]);
  if (endOverBudget(s, ctx.indexOf, fit) > 0) await recordFinished(ctx);
  return fit;
}

/** A new batch for the first `fit` open items; the run is told once that the shard holds what it will. */
export async function submitRound(ctx: BatchShard, fit: number): Promise<void> {
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
  s.roundImages = submitted.images ?? items.length;
  s.createdAt = Date.now();
  s.pollMs = ctx.firstPollMs;
  if (!s.handedOff && input.limits.handOff) {
    s.handedOff = true;
    const holding = s.final.filter((status) => status === null).length;
    await tellRun(input, shardSubmittedSignal, { workflowId: workflowInfo().workflowId, holding });
  }
  // The run's details and memo count the batch in flight from now.
  await tellRun(input, shardProgressSignal, progressOf(ctx));
  showBatches(ctx, { memo: true });
}

/**
 * Polls the round's batch with growing waits until it ends; undefined when the history is full
 * (the caller continues as new, the batch still polled there). Cancel, the deadline and
 * task_timeout ask OpenAI to cancel it once, then wait for it to say so.
 */
export async function pollUntilEnded(ctx: BatchShard): Promise<BatchStatusOutput | undefined> {
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
    s.nextPollAt = Date.now() + Math.max(1, stopAt);
    showBatches(ctx);
    await condition(() => s.cancelled && s.cancelAsked === undefined, Math.max(1, stopAt));
    s.apiCalls.lookup++;
    const batch = await a.openaiBatchStatus(ref);
    s.lastPoll = batch;
    if (TERMINAL_BATCH_STATES.has(batch.status)) return batch;
    s.pollMs = nextPollMs(s.pollMs, ctx.firstPollMs, input.limits.batch?.maxPollMs);
    if (historyFull(input.limits)) return undefined;
  }
}

/** The ended batch's results stored, each item final or open again; the run told. */
export async function collectRound(ctx: BatchShard, batch: BatchStatusOutput): Promise<void> {
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
export async function heldCallRound(ctx: BatchShard, fit: number): Promise<void> {
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

export async function recordFinished(ctx: BatchShard): Promise<void> {
  const { s, input, a } = ctx;
  if (s.outcomes.length > 0)
    await a.recordOutcomes({ plan: input.plan, shard: input.shard.index, outcomes: s.outcomes.splice(0) });
  await tellRun(input, shardProgressSignal, progressOf(ctx));
  showBatches(ctx, { memo: true });
}

export function progressOf(ctx: BatchShard): ShardProgress {
  return batchProgress(ctx.s, ctx.input.shard.index, ctx.input.limits);
}

/**
 * The shard's batches in the Temporal UI (batch mode): its details at every poll (no history
 * event), its memo when a batch starts or ends (one event each).
 */
function showBatches(ctx: BatchShard, options: { memo?: boolean } = {}): void {
  const { batches } = progressOf(ctx);
  if (!batches) return;
  setCurrentDetails(describeBatches(batches));
  if (options.memo) upsertMemo({ batches });
}

export function deadlineDue(ctx: BatchShard): boolean {
  return isDeadlineDue(ctx.input.limits, Date.now());
}
