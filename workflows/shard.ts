// The shard workflow: up to 500 items (one batch lookup's worth) from queued to stored. Four
// lanes run side by side (submit, hand-off, poll, collect); what happens to the items lives in
// ShardItems (shard-items.ts), which the lanes tell each activity's answer.
import {
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  patched,
  setHandler,
  TemporalFailure,
  workflowInfo,
  type SignalDefinition,
} from '@temporalio/workflow';
import { FailureType } from '../common/failure-types.js';
import {
  cancelSignal,
  inFlightShareSignal,
  pauseSignal,
  resumeSignal,
  shardFinishedSignal,
  shardProgressQuery,
  shardSubmittedSignal,
  taskFinishedSignal,
  taskQueuesOf,
} from '../common/names.js';
import type { CarriedSubmit, ErrorSummary, ShardHandoff, ShardInput, ShardResult } from '../common/types.js';
import { zeroApiCalls, zeroCounts } from '../common/item-counts.js';
import { plural } from '../common/words.js';
import { activitiesOn } from './activities.js';
import { collectBatch } from './shard-collect.js';
import { nextWouldExceed } from './shard-credits.js';
import { ShardIndices, ShardItems } from './shard-items.js';
import { dueLookupDelay, learnGenerationTimes } from './lookup-timing.js';
import { ShardProgressPublisher } from './shard-progress.js';
import { RunCheck } from './run-check.js';
import {
  accountRefusal,
  deadlineError,
  failureSummary,
  freshShardState,
  lookupTarget,
  nextPollDelay,
  Phase,
  pollBounds,
} from './tracking.js';

/** Continue-as-new well before Temporal's 10,240-event warning; a shard needs about 10 per item. */
export const SHARD_HISTORY_LIMIT = 4_000;
/** Bounds on pending activities (Temporal wants at most a few hundred per workflow). */
const MAX_PENDING_SUBMITS = 100;
/**
 * Items per submitSlice activity: at most half the submits a shard keeps scheduled (about 1.5 s
 * of the run's rate, run-shards.ts), so that one slice is scheduled while another submits and the
 * calls never wait for a dispatch; at most this many (BENCHMARKS.md, capacity: slice sizes).
 */
export const MAX_SLICE = 50;
const COLLECT_BATCH = 50;
const MAX_COLLECT_BATCHES = 3;
/** Shards started before their tails were released replay without it (releaseTail). */
const TAIL_RELEASE_PATCH = 'shard-tail-release';

/**
 * Submits a shard's items under the run's limits, tracks them with one batch lookup per poll,
 * fetches finished tasks and stores their images.
 *
 * Durable by construction: every API call and file write is an activity, and all item state lives
 * in arrays that survive worker crashes (replay) and continue-as-new (carried over), so a restart
 * costs at most the submits that were in flight when a worker died. Pause stops submitting but
 * keeps collecting; cancel also reports never-submitted items as cancelled.
 */
export async function shardWorkflow(input: ShardInput): Promise<ShardResult> {
  if (!input.limits.reportResult) return workShard(input);
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

/** A signal to the shard's run. Only a run that is gone refuses it, and then nothing waits for this shard. */
async function tellRun<Args extends unknown[]>(
  input: ShardInput,
  signal: SignalDefinition<Args>,
  ...args: Args
): Promise<void> {
  await getExternalWorkflowHandle(input.runId)
    .signal(signal, ...args)
    .catch(() => undefined);
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
  const { lookupTasks, planShard, recordOutcomes, submitItem, submitSlice } = activities;
  const poll = pollBounds(limits);
  // An earlier shard's pace, already within these bounds (every shard of a run has the same).
  const firstPollMs = limits.firstPollMs ?? poll.minMs;
  const s = input.carried ?? freshShardState(shard.count, input.paused, input.cancelled, firstPollMs);
  const at = new ShardIndices(shard);
  const items = new ShardItems(s, at, limits);

  let draining = false;
  let submitLaneDone = false;
  let pendingSubmits = 0;
  let collectBatches = 0;
  let stopReason: string | undefined = s.budgetStopped ? 'budget exhausted' : undefined;
  const inFlight = new Set<Promise<void>>();
  const workLeft = (): boolean => items.workLeft(!submitLaneDone);

  const shardProgress = new ShardProgressPublisher(input, items);
  const publish = (force: boolean) => shardProgress.publish(force);
  setHandler(shardProgressQuery, () => shardProgress.progress());
  setHandler(pauseSignal, () => void (s.paused = true));
  setHandler(resumeSignal, () => void (s.paused = false));
  setHandler(cancelSignal, () => void (s.cancelled = true));
  // Kept in `limits`, which continue-as-new carries over with the rest of the input.
  setHandler(inFlightShareSignal, (share) => void (limits.maxInFlight = Math.max(limits.maxInFlight, share)));
  setHandler(taskFinishedSignal, (task) => items.taskFinished(task));
  const runCheck = new RunCheck(() => shardProgress.tellRun(), limits.runCheckMs);

  /** Runs an activity chain without awaiting it; continue-as-new waits for all of them. */
  function spawn(work: Promise<void>): void {
    const tracked = work.finally(() => {
      inFlight.delete(tracked);
      publish(false);
      if (historyFull()) draining = true;
    });
    inFlight.add(tracked);
  }

  function historyFull(): boolean {
    const info = workflowInfo();
    return info.historyLength > (limits.historyLimit ?? SHARD_HISTORY_LIMIT) || info.continueAsNewSuggested;
  }

  // ----- submitting -----

  const maxPendingSubmits = limits.maxPendingSubmits ?? MAX_PENDING_SUBMITS;
  const sliceSize = Math.max(1, Math.min(MAX_SLICE, Math.ceil(maxPendingSubmits / 2)));
  const canSubmit = (): boolean =>
    !s.paused &&
    items.count(Phase.queued) > 0 &&
    items.atApi() < limits.maxInFlight &&
    pendingSubmits < maxPendingSubmits;
  const overBudget = (): boolean => limits.allowance !== undefined && nextWouldExceed(s, limits.allowance);

  /** Where and until when the shard's items are submitted. */
  const submitTarget: { webhook?: string; notAfter?: number } = {
    ...(limits.webhookBaseUrl
      ? { webhook: `${limits.webhookBaseUrl}/${encodeURIComponent(workflowInfo().workflowId)}` }
      : {}),
    ...(limits.deadlineAt !== undefined ? { notAfter: limits.deadlineAt } : {}),
  };

  /**
   * A submit that failed for good. Past the deadline it was never sent: it ends as `deadline`
   * with the others not submitted. A refusal of the account, not the item (nothing else would be
   * accepted either), pauses the whole run with nothing marked failed: returns why; `resume`
   * submits again.
   */
  function submitFailed(index: number, failure: ErrorSummary): string | undefined {
    if (failure.type === FailureType.DeadlinePassed) return void items.requeueUntried(index);
    const reason = accountRefusal(failure);
    if (reason === undefined) return void items.finish(index, 'failed', failure);
    items.requeueUntried(index);
    s.paused = true;
    return reason;
  }

  async function pauseRun(reason: string | undefined): Promise<void> {
    if (reason !== undefined) await getExternalWorkflowHandle(input.runId).signal(pauseSignal, { reason });
  }

  /** One item alone, with Temporal's retries: a slice's item whose submit may heal (`carriesOn` its call). */
  async function submitOne(index: number, attempt: number, carriesOn: CarriedSubmit): Promise<void> {
    try {
      const summary = `submit items[${at.plan(index)}]${attempt > 1 ? `, attempt ${attempt}` : ''}`;
      const { taskId, calls } = await submitItem.executeWithOptions({ summary }, [
        { plan, index: at.plan(index), attempt, carriesOn, ...submitTarget },
      ]);
      s.apiCalls.submit += calls ?? 1;
      items.submitted(index, taskId, Date.now());
    } catch (error) {
      const failure = failureSummary(error);
      // The API answered, with a refusal, unless the submit was never sent.
      if (failure.type !== FailureType.ApiNotConfigured && failure.type !== FailureType.ReferencesUnhosted)
        s.apiCalls.submit++;
      await pauseRun(submitFailed(index, failure));
    } finally {
      pendingSubmits--;
    }
  }

  /** A slice of queued items in one activity (activities/submit-slice.ts), each told its outcome. */
  async function submitSliceOf(slice: { index: number; attempt: number }[]): Promise<void> {
    let retriedAlone = 0;
    let refusal: string | undefined;
    try {
      const first = at.plan(slice[0]!.index);
      const { items: outcomes, calls } = await submitSlice.executeWithOptions(
        { summary: `submit ${plural(slice.length, 'item')} from items[${first}]` },
        [
          {
            plan,
            items: slice.map(({ index, attempt }) => ({ index: at.plan(index), attempt })),
            ...submitTarget,
          },
        ],
      );
      s.apiCalls.submit += calls ?? 0;
      const answeredAt = Date.now();
      const attempts = new Map(slice.map(({ index, attempt }) => [index, attempt]));
      for (const outcome of outcomes) {
        const index = at.local(outcome.index);
        if (outcome.taskId !== undefined) items.submitted(index, outcome.taskId, answeredAt);
        else if (outcome.failure !== undefined) refusal = submitFailed(index, outcome.failure) ?? refusal;
        else if (outcome.retryAs === undefined) items.requeueUntried(index);
        else {
          retriedAlone++;
          spawn(submitOne(index, attempts.get(index) ?? 1, outcome.retryAs));
        }
      }
    } catch (error) {
      // Only a failure of the slice as a whole (the plan, the API's settings) gets here.
      const failure = failureSummary(error);
      for (const { index } of slice) refusal = submitFailed(index, failure) ?? refusal;
    } finally {
      pendingSubmits -= slice.length - retriedAlone;
    }
    await pauseRun(refusal);
  }

  async function submitLane(): Promise<void> {
    if (limits.allowance !== undefined && s.estimates === null) {
      const { offset, count, indices } = shard;
      s.estimates = (await planShard({ plan, offset, count, ...(indices ? { indices } : {}) })).credits;
    }
    const nothingToSubmit = (): boolean =>
      draining || s.cancelled || items.atApi() + items.count(Phase.queued) === 0;
    const deadlinePassed = (): void => {
      s.deadlinePassed = true;
      stopReason = 'deadline passed';
    };
    for (;;) {
      // A pause arms the paused shard's run check (its wait has no other end).
      const pausedAtWait = s.paused;
      const pauseChanged = (): boolean => runCheck.enabled && s.paused !== pausedAtWait;
      const ready = (): boolean => nothingToSubmit() || canSubmit() || pauseChanged();
      const left = limits.deadlineAt === undefined ? undefined : Math.max(0, limits.deadlineAt - Date.now());
      // The deadline wakes the lane too: from then on nothing is submitted.
      if (left === 0) return deadlinePassed();
      const pausedWait = s.paused ? runCheck.pausedWaitMs() : undefined;
      const waitMs = left === undefined ? pausedWait : Math.min(left, pausedWait ?? left);
      if (waitMs === undefined) {
        await condition(ready);
      } else if (!(await condition(ready, waitMs))) {
        if (waitMs === left) return deadlinePassed();
        await checkRun();
        // A shard paused for days continues as new on its checks alone.
        if (historyFull()) draining = true;
        continue;
      }
      if (nothingToSubmit()) return;
      // Shards started before the check built a slice here even when a pause had come in the same
      // workflow task as what woke the lane: they replay so.
      if (runCheck.enabled && !canSubmit()) continue;
      if (runCheck.due()) {
        await checkRun();
        continue;
      }
      if (overBudget()) {
        s.budgetStopped = true;
        stopReason = 'budget exhausted';
        return;
      }
      const slice: { index: number; attempt: number }[] = [];
      do {
        slice.push(items.startSubmit());
        pendingSubmits++;
      } while (slice.length < sliceSize && canSubmit() && !overBudget());
      spawn(submitSliceOf(slice));
    }
  }

  /** A run that refuses the shard's signal is gone: its shard submits nothing more, as if cancelled. */
  async function checkRun(): Promise<void> {
    if (await runCheck.check()) return;
    log.warn('the run is gone (terminated?): nothing more is submitted', { run: input.runId });
    s.cancelled = true;
    stopReason = 'its run ended';
  }

  /**
   * Tells the run once every item has been sent to submit, so that it starts the next shard now
   * rather than when this one's last tasks are stored (workflows/in-flight-shares.ts). What is at
   * the API then, submits still in flight included, is all this shard can ever hold again: a
   * resubmit reuses the failed item's slot. A submit the API keeps failing (Temporal retrying it
   * for minutes, until its refusal is proven) must not hold the next shard back.
   */
  async function handOffWhenSubmitted(): Promise<void> {
    if (!limits.handOff) return;
    if (!s.handedOff) {
      await condition(() => stopped() || items.count(Phase.queued) === 0);
      if (stopped()) return;
      s.handedOff = true;
      // Nothing is queued now: what is not final is what is at the API.
      s.handedOffHolding = items.notFinal();
      const generationMs = s.generationMs ? { generationMs: s.generationMs } : {};
      await tellHandoff({ holding: s.handedOffHolding, ...generationMs });
    }
    await releaseTail();
  }

  /**
   * Tells the run once more when the shard's tail is down to a quarter of what it handed off
   * with, so that a few items held for minutes (a submit retried until its refusal is proven, a
   * task stuck until task_timeout) do not keep the rest of its slots from the next shards: with
   * every slot in tails, the run starts nothing until a shard closes. Once per shard: each tell is
   * a signal in the run's history, and a quarter frees most of the slots.
   */
  async function releaseTail(): Promise<void> {
    const handedOffWith = s.handedOffHolding;
    // Runs handed off before this existed replay as they ran: no marker, no second signal.
    if (handedOffWith === undefined || !patched(TAIL_RELEASE_PATCH)) return;
    await condition(() => stopped() || items.notFinal() <= Math.floor(handedOffWith / 4));
    if (stopped()) return;
    s.handedOffHolding = undefined;
    await tellHandoff({ holding: items.notFinal() });
  }

  function stopped(): boolean {
    return draining || s.cancelled || !workLeft();
  }

  async function tellHandoff(handoff: Omit<ShardHandoff, 'workflowId'>): Promise<void> {
    await tellRun(input, shardSubmittedSignal, { workflowId: workflowInfo().workflowId, ...handoff });
  }

  // ----- tracking -----

  async function pollLane(): Promise<void> {
    for (;;) {
      await condition(() => draining || !workLeft() || items.count(Phase.submitted) > 0);
      if (draining || !workLeft()) return;
      // An interruptible sleep: continue-as-new must not wait for a whole poll interval, nor a shard
      // whose tasks webhooks have all reported (without webhooks only this lane empties `submitted`).
      // The lookup's time is carried over continue-as-new, so the next run keeps the pace rather
      // than starting a whole interval over. A task about to be overdue is looked up when it is,
      // never sooner than the shortest interval (overdue tasks must not set off lookups back to back).
      // Tasks submitted during the wait make the lookup due sooner: it is planned again once a
      // lookup's worth of them have been (a bounded number of timers, not one per submit).
      const now = Date.now();
      const due = Math.min(now + lookupWaitMs(now), Math.max(items.firstOverdueAt(), now + poll.minMs));
      s.nextLookupAt = Math.min(s.nextLookupAt ?? due, due);
      const waitMs = s.nextLookupAt - now;
      const plannedAtSubmits = s.apiCalls.submit;
      const noneLeft = () => draining || items.count(Phase.submitted) === 0;
      const moreSubmitted = () =>
        !limits.webhookBaseUrl && s.apiCalls.submit >= plannedAtSubmits + lookupTargetNow();
      if (waitMs > 0 && (await condition(() => noneLeft() || moreSubmitted(), waitMs))) {
        if (draining) return;
        if (!noneLeft()) continue;
      }
      s.nextLookupAt = undefined;
      const { indices, taskIds } = items.submittedTasks();
      if (taskIds.length === 0) continue;
      const { statuses, results, calls } = await lookupTasks.executeWithOptions(
        { summary: `look up ${plural(taskIds.length, 'task')}` },
        [{ plan, taskIds }],
      );
      s.apiCalls.lookup += calls ?? 1;
      const answeredAt = Date.now();
      const { finished, finishedSubmittedAt, unknown } = items.lookedUp(indices, statuses, results);
      for (const task of unknown) log.warn('unknown task status; treating it as not finished yet', task);
      items.overdue(answeredAt);
      if (!limits.webhookBaseUrl)
        s.generationMs = learnGenerationTimes(
          generationTimes(),
          finishedSubmittedAt,
          s.lastLookup?.atMs,
          answeredAt,
        );
      s.lastLookup = { atMs: answeredAt, finished };
      s.pollMs = nextPollDelay(s.pollMs, finished, lookupTargetNow(), poll.minMs, poll.maxMs);
      if (submitting()) s.busyPollMs = s.pollMs;
    }
  }

  function submitting(): boolean {
    return !s.paused && !s.cancelled && items.count(Phase.queued) > 0;
  }

  function lookupTargetNow(): number {
    return lookupTarget(limits.maxInFlight, submitting() ? undefined : items.count(Phase.submitted));
  }

  function generationTimes(): number[] {
    return s.generationMs ?? limits.generationMs ?? [];
  }

  /**
   * The wait before the next lookup: until its tasks are due by their ages (lookup-timing.ts), else
   * the last lookups' pace. With webhooks, lookups only catch lost deliveries: the pace alone.
   */
  function lookupWaitMs(nowMs: number): number {
    const due = limits.webhookBaseUrl
      ? undefined
      : dueLookupDelay({
          nowMs,
          submittedAtMs: items.submittedTimes(),
          lastLookupAtMs: s.lastLookup?.atMs,
          samples: generationTimes(),
          target: lookupTargetNow(),
          minMs: poll.minMs,
          maxMs: poll.maxMs,
        });
    if (due === undefined) return s.pollMs;
    // A lookup that found nothing backs off as the spec asks, whatever the ages say.
    return s.lastLookup?.finished === 0 ? Math.max(due, s.pollMs) : due;
  }

  // ----- collecting -----

  const collector = { items, activities, plan, shardIndex: shard.index, apiCalls: s.apiCalls };
  async function collectLane(): Promise<void> {
    for (;;) {
      await condition(
        () => draining || !workLeft() || (items.hasToCollect() && collectBatches < MAX_COLLECT_BATCHES),
      );
      if (draining || !workLeft()) return;
      collectBatches++;
      const batch = items.takeToCollect(COLLECT_BATCH);
      spawn(collectBatch(collector, batch).finally(() => void collectBatches--));
    }
  }

  await Promise.all([
    submitLane().finally(() => void (submitLaneDone = true)),
    handOffWhenSubmitted(),
    pollLane(),
    collectLane(),
  ]);
  while (inFlight.size > 0) await Promise.all([...inFlight]);

  const recordFinished = async (): Promise<void> => {
    if (s.outcomes.length) await recordOutcomes({ plan, shard: shard.index, outcomes: s.outcomes.splice(0) });
    publish(true);
  };
  const submittable = !s.cancelled && !s.budgetStopped && !s.deadlinePassed;
  if (draining && (items.atApi() > 0 || (items.count(Phase.queued) > 0 && submittable))) {
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
  return shardProgress.result({ stopReason, endedByDeadline });
}
