// The shard workflow: up to 500 items from queued to stored. Four lanes run side by side, each in
// a module of its own: submit (shard-submit.ts), hand-off (shard-handoff.ts), tracking
// (shard-tracking.ts) and collect (below, with shard-collect.ts); what happens to the items lives
// in ShardItems (shard-items.ts), which the lanes tell each activity's answer.
import {
  CancellationScope,
  condition,
  continueAsNew,
  setHandler,
  TemporalFailure,
} from '@temporalio/workflow';
import {
  cancelSignal,
  inFlightShareSignal,
  pauseSignal,
  resumeSignal,
  shardFinishedSignal,
  shardProgressQuery,
  taskFinishedSignal,
  taskQueuesOf,
} from '../common/names.js';
import type { ShardInput, ShardResult } from '../common/types.js';
import { zeroApiCalls, zeroCounts } from '../common/item-counts.js';
import { activitiesOn } from './activities.js';
import { RunCheck } from './run-check.js';
import { collectBatch } from './shard-collect.js';
import { historyFull, tellRun, workLeft, type ShardContext } from './shard-context.js';
import { handOffWhenSubmitted } from './shard-handoff.js';
import { learnGenerationTimes } from './lookup-timing.js';
import { ShardIndices } from './item-phases.js';
import { ShardItems } from './shard-items.js';
import { ShardProgressPublisher } from './shard-progress.js';
import { SubmitLane } from './shard-submit.js';
import { TrackLane } from './shard-tracking.js';
import { deadlineError, freshShardState, Phase, pollBounds } from './tracking.js';

const COLLECT_BATCH = 50;
const MAX_COLLECT_BATCHES = 3;

/**
 * Submits a shard's items under the run's limits, tracks them the provider's way (batch lookups,
 * list sweeps or one call per task, each timed by the tasks' ages), fetches finished tasks and
 * stores their images, and tells its run its result by signal.
 *
 * Durable by construction: every API call and file write is an activity, and all item state lives
 * in arrays that survive worker crashes (replay) and continue-as-new (carried over), so a restart
 * costs at most the submits that were in flight when a worker died. Pause stops submitting but
 * keeps collecting; cancel also reports never-submitted items as cancelled.
 */
export async function shardWorkflow(input: ShardInput): Promise<ShardResult> {
  let result: ShardResult;
  try {
    result = await workShard(input);
  } catch (error) {
    // What fails the shard's workflow (an activity out of retries, a cancel from outside) would
    // otherwise leave a run that continued as new waiting for this shard forever.
    if (error instanceof TemporalFailure) {
      const failure = `shard ${input.shard.index + 1} ended: ${withCauses(error)}`;
      await CancellationScope.nonCancellable(() =>
        tellRun(input, shardFinishedSignal, failedShard(input.shard.index, failure)),
      );
    }
    throw error;
  }
  await tellRun(input, shardFinishedSignal, result);
  return result;
}

/** "Activity task failed: <what the activity said>". */
function withCauses(error: Error): string {
  const messages: string[] = [];
  for (let at: unknown = error; at instanceof Error; at = at.cause) messages.push(at.message);
  return messages.join(': ');
}

function failedShard(shard: number, failure: string): ShardResult {
  return { shard, counts: zeroCounts(), creditsSpent: 0, apiCalls: zeroApiCalls(), images: 0, failure };
}

async function workShard(input: ShardInput): Promise<ShardResult> {
  const { plan, shard, limits } = input;
  const activities = activitiesOn(taskQueuesOf(input.apiAccount), input.governed);
  // An earlier shard's pace, already within these bounds (every shard of a run has the same).
  const firstPollMs = limits.firstPollMs ?? pollBounds(limits).minMs;
  const s = input.carried ?? freshShardState(shard.count, input.paused, input.cancelled, firstPollMs);
  const at = new ShardIndices(shard);
  const items = new ShardItems(s, at, limits);
  const progress = new ShardProgressPublisher(input, items);
  const inFlight = new Set<Promise<void>>();
  const ctx: ShardContext = {
    input,
    s,
    limits,
    items,
    at,
    activities,
    progress,
    runCheck: new RunCheck(() => progress.tellRun(), limits.runCheckMs),
    draining: false,
    othersEnded: false,
    submitLaneDone: false,
    stopReason: s.budgetStopped ? 'budget exhausted' : undefined,
    spawn(work) {
      const tracked = work.finally(() => {
        inFlight.delete(tracked);
        progress.publish(false);
        if (historyFull(limits)) ctx.draining = true;
      });
      inFlight.add(tracked);
    },
  };

  setHandler(shardProgressQuery, () => progress.progress());
  setHandler(pauseSignal, () => void (s.paused = true));
  setHandler(resumeSignal, () => void (s.paused = false));
  setHandler(cancelSignal, () => void (s.cancelled = true));
  // Kept in `limits`, which continue-as-new carries over with the rest of the input.
  setHandler(inFlightShareSignal, (share) => void (limits.maxInFlight = Math.max(limits.maxInFlight, share)));
  // A stream's end tells when its task finished: a generation time, which times the lookups that
  // catch a broken stream (single-checks.ts) instead of their slowest pace. Not webhooks': BFL's
  // refusal holds and hand-offs were tuned on webhook runs that learn none (BENCHMARKS.md).
  if (limits.statusStreams)
    items.onPushedFinish = (submittedAt, now) => {
      s.generationMs = learnGenerationTimes(
        s.generationMs ?? limits.generationMs ?? [],
        [submittedAt],
        now,
        now,
      );
    };
  setHandler(taskFinishedSignal, (task) => {
    s.apiCalls.lookup += task.lookupCalls ?? 0;
    if (!task.callOnly) items.taskFinished(task, Date.now());
  });

  await Promise.all([
    new SubmitLane(ctx).run().finally(() => void (ctx.submitLaneDone = true)),
    handOffWhenSubmitted(ctx),
    Promise.all([new TrackLane(ctx).run(), collectLane(ctx)]).finally(() => void (ctx.othersEnded = true)),
  ]);
  while (inFlight.size > 0) await Promise.all([...inFlight]);

  const recordFinished = async (): Promise<void> => {
    if (s.outcomes.length)
      await activities.recordOutcomes({ plan, shard: shard.index, outcomes: s.outcomes.splice(0) });
    progress.publish(true);
  };
  const submittable = !s.cancelled && !s.budgetStopped && !s.deadlinePassed;
  if (ctx.draining && (items.atApi() > 0 || (items.count(Phase.queued) > 0 && submittable))) {
    await recordFinished();
    return continueAsNew<typeof shardWorkflow>({
      ...input,
      paused: s.paused,
      cancelled: s.cancelled,
      carried: s,
    });
  }

  // Nothing is at the API any more: what was never submitted ends here.
  const endedByDeadline = items.endUnsubmitted({
    ...(s.deadlinePassed && limits.deadlineAt !== undefined
      ? { deadline: deadlineError(limits.deadlineAt) }
      : {}),
    cancelled: s.cancelled,
  });
  await recordFinished();
  return progress.result({ stopReason: ctx.stopReason, endedByDeadline });
}

/** Finished tasks to the collect step (shard-collect.ts), a few batches at once; ends with them done. */
async function collectLane(ctx: ShardContext): Promise<void> {
  const { items, activities, input, s } = ctx;
  const collector = {
    items,
    activities,
    plan: input.plan,
    shardIndex: input.shard.index,
    apiCalls: s.apiCalls,
  };
  let batches = 0;
  for (;;) {
    await condition(
      () => ctx.draining || !workLeft(ctx) || (items.hasToCollect() && batches < MAX_COLLECT_BATCHES),
    );
    if (ctx.draining || !workLeft(ctx)) {
      // The lane ends with its batches: a draining shard submits until then (ctx.othersEnded).
      await condition(() => batches === 0);
      return;
    }
    batches++;
    const batch = items.takeToCollect(COLLECT_BATCH);
    ctx.spawn(collectBatch(collector, batch).finally(() => void batches--));
  }
}
