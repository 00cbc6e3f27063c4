// What the lanes of a shard (submit, hand-off, tracking, collect) share: the shard's input, its
// carried state and items, its activities, and the few flags one lane sets for the others. The
// shard workflow (shard.ts) builds it; each lane lives in a module of its own.
import { getExternalWorkflowHandle, workflowInfo, type SignalDefinition } from '@temporalio/workflow';
import type { ShardCarriedState, ShardInput, ShardLimits } from '../common/types.js';
import type { ActivitiesOn } from './activities.js';
import type { RunCheck } from './run-check.js';
import type { ShardIndices } from './item-phases.js';
import type { ShardItems } from './shard-items.js';
import type { ShardProgressPublisher } from './shard-progress.js';

/** Continue-as-new well before Temporal's 10,240-event warning; a shard needs about 10 per item. */
export const SHARD_HISTORY_LIMIT = 4_000;

export interface ShardContext {
  readonly input: ShardInput;
  /** Carried over continue-as-new as it is. */
  readonly s: ShardCarriedState;
  readonly limits: ShardLimits;
  readonly items: ShardItems;
  readonly at: ShardIndices;
  readonly activities: ActivitiesOn;
  readonly runCheck: RunCheck;
  readonly progress: ShardProgressPublisher;
  /** Set when the history is full: every lane winds down for continue-as-new. */
  draining: boolean;
  /**
   * Set once the tracking and collect lanes have ended, their activities done. A draining shard
   * submits until then: its slots at the provider would otherwise empty while the last collects
   * finish (seconds, at every continue-as-new).
   */
  othersEnded: boolean;
  /** Set once the submit lane has ended: nothing more will be submitted by this execution. */
  submitLaneDone: boolean;
  /** Why the shard stopped submitting early (the budget, the deadline, its run gone). */
  stopReason: string | undefined;
  /** Runs an activity chain without awaiting it; continue-as-new waits for all of them. */
  spawn(work: Promise<void>): void;
}

/** Something is left to do: at the API, or queued while the submit lane goes on. */
export function workLeft(ctx: ShardContext): boolean {
  return ctx.items.workLeft(!ctx.submitLaneDone);
}

/** Whether the lanes should end: the history is full, the shard cancelled, or nothing is left. */
export function stopped(ctx: ShardContext): boolean {
  return ctx.draining || ctx.s.cancelled || !workLeft(ctx);
}

/** Whether this execution's history is past the shard's limit (continue-as-new is due). */
export function historyFull(limits: ShardLimits): boolean {
  const info = workflowInfo();
  return info.historyLength > (limits.historyLimit ?? SHARD_HISTORY_LIMIT) || info.continueAsNewSuggested;
}

/** A signal to the shard's run. Only a run that is gone refuses it, and then nothing waits for this shard. */
export async function tellRun<Args extends unknown[]>(
  input: ShardInput,
  signal: SignalDefinition<Args>,
  ...args: Args
): Promise<void> {
  await getExternalWorkflowHandle(input.runId)
    .signal(signal, ...args)
    .catch(() => undefined);
}
