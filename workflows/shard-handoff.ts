// A shard's hand-off to its run (workflows/in-flight-shares.ts): once every item has been sent to
// submit, the run may start the next shard with what this one will never hold again; once its
// tail is down to a quarter, the rest of its slots go too.
import { condition, workflowInfo } from '@temporalio/workflow';
import { shardSubmittedSignal } from '../common/names.js';
import type { HandedSlots, ShardHandoff } from '../common/types.js';
import { concurrencySeen } from './asked-slots.js';
import { capNow } from './concurrency-cap.js';
import { stopped, tellRun, type ShardContext } from './shard-context.js';
import { Phase } from './tracking.js';

/**
 * Tells the run once every item has been sent to submit, so that it starts the next shard now
 * rather than when this one's last tasks are stored. What is at the API then, submits still in
 * flight included, is all this shard can ever hold again: a resubmit reuses the failed item's
 * slot. A submit the API keeps failing (Temporal retrying it for minutes, until its refusal is
 * proven) must not hold the next shard back.
 */
export async function handOffWhenSubmitted(ctx: ShardContext): Promise<void> {
  const { s, items, limits } = ctx;
  if (!limits.handOff) return;
  if (!s.handedOff) {
    await condition(() => stopped(ctx) || items.count(Phase.queued) === 0);
    if (stopped(ctx)) return;
    s.handedOff = true;
    // Nothing is queued now: what is not final is what is at the API.
    s.handedOffHolding = items.notFinal();
    const generationMs = s.generationMs ? { generationMs: s.generationMs } : {};
    const slots = handedSlots(ctx);
    await tellHandoff(ctx, { holding: s.handedOffHolding, ...generationMs, ...(slots ? { slots } : {}) });
  }
  await releaseTail(ctx);
}

/**
 * Tells the run once more when the shard's tail is down to a quarter of what it handed off with,
 * so that a few items held for minutes (a submit retried until its refusal is proven, a task stuck
 * until task_timeout) do not keep the rest of its slots from the next shards: with every slot in
 * tails, the run starts nothing until a shard closes. Once per shard: each tell is a signal in the
 * run's history, and a quarter frees most of the slots.
 */
async function releaseTail(ctx: ShardContext): Promise<void> {
  const { s, items } = ctx;
  const handedOffWith = s.handedOffHolding;
  if (handedOffWith === undefined) return;
  await condition(() => stopped(ctx) || items.notFinal() <= Math.floor(handedOffWith / 4));
  if (stopped(ctx)) return;
  s.handedOffHolding = undefined;
  await tellHandoff(ctx, { holding: items.notFinal() });
}

/** Where the provider refuses over its concurrency: the cap in force, and the tasks holding slots. */
function handedSlots(ctx: ShardContext): HandedSlots | undefined {
  const { s, items, limits } = ctx;
  if (!s.concurrency || !limits.concurrency?.refused) return undefined;
  const submitting = Array.from({ length: items.count(Phase.submitting) }, () => Date.now());
  const done = items.doneAtProvider();
  const cap = capNow(s.concurrency, done);
  // A shard whose submits ask for slots (`polled`) has no cap: the concurrency its refusals showed goes on.
  return {
    cap: Number.isFinite(cap) ? cap : (concurrencySeen(s.concurrency, done) ?? s.concurrency.base),
    heldSinceMs: [...items.submittedTimes(), ...submitting],
  };
}

async function tellHandoff(ctx: ShardContext, handoff: Omit<ShardHandoff, 'workflowId'>): Promise<void> {
  await tellRun(ctx.input, shardSubmittedSignal, { workflowId: workflowInfo().workflowId, ...handoff });
}
