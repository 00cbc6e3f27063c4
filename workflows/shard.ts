// The shard workflow: up to 500 items (one batch lookup's worth) from queued to stored.
import {
  condition,
  continueAsNew,
  patched,
  getExternalWorkflowHandle,
  log,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  cancelSignal,
  inFlightShareSignal,
  pauseSignal,
  resumeSignal,
  shardProgressQuery,
  shardProgressSignal,
  shardSubmittedSignal,
  taskFinishedSignal,
  taskQueuesOf,
} from '../common/names.js';
import { countAttributes, MANIFEST_ATTRIBUTE } from '../common/search-attributes.js';
import type {
  ErrorSummary,
  ItemStatus,
  ShardInput,
  ShardProgress,
  ShardResult,
  StoreRequest,
  TaskFinishedSignal,
} from '../common/types.js';
import { activitiesOn } from './activities.js';
import {
  accountRefusal,
  countItems,
  deadlineError,
  finishedItems,
  failureSummary,
  FINAL_PHASE,
  freshShardState,
  isFinal,
  lookupTarget,
  lostTaskError,
  nextPollDelay,
  firstOverdueAt,
  overdueItems,
  Phase,
  pollBounds,
  shouldResubmit,
  taskTimedOut,
} from './tracking.js';
import { plural } from '../common/words.js';

/** Continue-as-new well before Temporal's 10,240-event warning; a shard needs about 10 per item. */
export const SHARD_HISTORY_LIMIT = 4_000;
/** Bounds on pending activities (Temporal wants at most a few hundred per workflow). */
const MAX_PENDING_SUBMITS = 100;
const COLLECT_BATCH = 50;
const MAX_COLLECT_BATCHES = 3;
/** Webhooks kept for tasks whose submit has not returned yet (fast tasks outrun the activity result). */
const MAX_EARLY_WEBHOOKS = 1_000;
/** Finished items between search-attribute upserts: about ten per shard, not one per item. */
const PUBLISH_STEP = 50;
/** Shards recorded before overdue tasks were confirmed by a GET replay giving them up at once. */
const CONFIRM_OVERDUE_PATCH = 'confirm-overdue-by-get';

interface KnownResult {
  status: string;
  urls?: string[];
  creditsCost?: number;
  error?: ErrorSummary;
}

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
  const { plan, shard, limits } = input;
  const { fetchTask, lookupTasks, planShard, recordOutcomes, storeResults, submitItem } = activitiesOn(
    taskQueuesOf(input.apiAccount),
    input.governed,
  );
  const poll = pollBounds(limits);
  // An earlier shard's pace, already within these bounds (every shard of a run has the same).
  const firstPollMs = limits.firstPollMs ?? poll.minMs;
  const s = input.carried ?? freshShardState(shard.count, input.paused, input.cancelled, firstPollMs);
  const submittedAt = (s.submittedAt ??= new Array<number | null>(shard.count).fill(null));
  const indexByTask = new Map<string, number>();
  s.taskIds.forEach((taskId, index) => {
    if (taskId) indexByTask.set(taskId, index);
  });
  /** Results learned from webhooks: their items skip the GET. Not carried over continue-as-new. */
  const known = new Map<number, KnownResult>();
  /** Webhooks for task ids not known yet: applied when their submit returns. Not carried over either. */
  const early = new Map<string, TaskFinishedSignal>();
  /**
   * Submitted items the last lookup said were being generated: display only, so not carried over
   * continue-as-new (the next lookup refills it).
   */
  const processing = new Set<number>();
  /** Overdue items whose GET decides whether they are given up (confirmOverdue). */
  const confirming = new Set<number>();
  const collectQueue: number[] = [];
  s.phase.forEach((phase, index) => {
    if (phase === Phase.storing) collectQueue.push(index);
  });

  let draining = false;
  let submitLaneDone = false;
  let pendingSubmits = 0;
  let collectBatches = 0;
  let stopReason: string | undefined = s.budgetStopped ? 'budget exhausted' : undefined;
  const inFlight = new Set<Promise<void>>();

  const count = (phase: number): number => s.phase.reduce((n, p) => n + (p === phase ? 1 : 0), 0);
  /**
   * What the API charged: a task's credits_cost, counted from the moment its finished task is
   * read, whether or not its images are stored yet (failed tasks are refunded, so they count 0).
   */
  const creditsSpent = (): number => s.credits.reduce((sum, credits) => sum + (credits ?? 0), 0);
  const atApi = (): number => count(Phase.submitting) + count(Phase.submitted) + count(Phase.storing);
  const workLeft = (): boolean => atApi() > 0 || (!submitLaneDone && count(Phase.queued) > 0);

  /** Estimated credits of the tasks at the API whose charge is not read yet. */
  const chargeUnread = (i: number): boolean =>
    s.phase[i] === Phase.submitting ||
    s.phase[i] === Phase.submitted ||
    (s.phase[i] === Phase.storing && !s.credits[i]);
  const creditsReserved = (): number | undefined =>
    s.estimates?.reduce((sum, estimate, i) => sum + (chargeUnread(i) ? estimate : 0), 0);

  const progress = (): ShardProgress => ({
    shard: shard.index,
    counts: countItems(s.phase, processing),
    creditsSpent: creditsSpent(),
    ...(s.estimates ? { creditsReserved: creditsReserved() } : {}),
    apiCalls: { ...s.apiCalls },
    images: s.images,
    tasksGivenUp: s.givenUp ?? 0,
    paused: s.paused,
    cancelled: s.cancelled,
  });
  setHandler(shardProgressQuery, progress);

  /** Only if the run passed its search attributes on (common/search-attributes.ts). */
  const indexed = workflowInfo().typedSearchAttributes.get(MANIFEST_ATTRIBUTE) !== undefined;
  let publishedFinished = finishedItems(countItems(s.phase));
  let toldRun = publishedFinished;
  /**
   * The UI's current details on every call; the run's, every limits.progressStep items; the
   * search attributes every PUBLISH_STEP items.
   */
  function publish(force: boolean): void {
    const counts = countItems(s.phase, processing);
    const done = finishedItems(counts);
    setCurrentDetails(
      `${done} of ${plural(shard.count, 'item')} final: ${counts.completed} completed, ${counts.failed} failed; ` +
        `${counts.submitted + counts.processing} at the API, ${counts.storing} storing, ${counts.queued} queued.` +
        (s.givenUp ? ` ${plural(s.givenUp, 'task')} given up after limits.task_timeout.` : ''),
    );
    const step = limits.progressStep;
    if (step !== undefined && Math.floor(done / step) > Math.floor(toldRun / step)) {
      toldRun = done;
      void getExternalWorkflowHandle(input.runId)
        .signal(shardProgressSignal, progress())
        .catch(() => undefined);
    }
    if (!indexed || done === publishedFinished || (!force && done - publishedFinished < PUBLISH_STEP)) return;
    publishedFinished = done;
    upsertSearchAttributes(countAttributes(counts, creditsSpent()));
  }
  setHandler(pauseSignal, () => void (s.paused = true));
  setHandler(resumeSignal, () => void (s.paused = false));
  setHandler(cancelSignal, () => void (s.cancelled = true));
  // Kept in `limits`, which continue-as-new carries over with the rest of the input.
  setHandler(inFlightShareSignal, (share) => void (limits.maxInFlight = Math.max(limits.maxInFlight, share)));
  function learnFinished(task: TaskFinishedSignal): void {
    const index = indexByTask.get(task.taskId);
    if (index === undefined) {
      if (early.size < MAX_EARLY_WEBHOOKS) early.set(task.taskId, task);
      return;
    }
    // Duplicates, tasks already collected, and tasks of an earlier attempt of a resubmitted item.
    if (s.phase[index] !== Phase.submitted || s.taskIds[index] !== task.taskId) return;
    known.set(index, task);
    s.phase[index] = Phase.storing;
    collectQueue.push(index);
  }
  setHandler(taskFinishedSignal, learnFinished);

  /** Runs an activity chain without awaiting it; continue-as-new waits for all of them. */
  function spawn(work: Promise<void>): void {
    const tracked = work.finally(() => {
      inFlight.delete(tracked);
      publish(false);
      const info = workflowInfo();
      if (info.historyLength > (limits.historyLimit ?? SHARD_HISTORY_LIMIT) || info.continueAsNewSuggested)
        draining = true;
    });
    inFlight.add(tracked);
  }

  function finish(index: number, status: Exclude<ItemStatus, 'completed'>, error: ErrorSummary | null): void {
    s.phase[index] = FINAL_PHASE[status];
    s.outcomes.push({
      index: shard.offset + index,
      status,
      taskId: s.taskIds[index] ?? null,
      attempts: s.attempts[index] ?? 0,
      creditsCost: s.credits[index] ?? 0,
      error,
    });
  }

  // ----- submitting -----

  const committedCredits = (): number =>
    s.phase.reduce((sum, phase, i) => {
      if (isFinal(phase)) return sum + (s.credits[i] ?? 0);
      if (phase !== Phase.queued) return sum + (s.estimates?.[i] ?? 0);
      return sum;
    }, 0);

  const canSubmit = (): boolean =>
    !s.paused &&
    count(Phase.queued) > 0 &&
    atApi() < limits.maxInFlight &&
    pendingSubmits < (limits.maxPendingSubmits ?? MAX_PENDING_SUBMITS);

  /** Back in the queue as if this attempt had not been made: the API did not take it. */
  function requeueUntried(index: number): void {
    s.phase[index] = Phase.queued;
    s.attempts[index] = (s.attempts[index] ?? 1) - 1;
  }

  async function submitOne(index: number): Promise<void> {
    s.attempts[index] = (s.attempts[index] ?? 0) + 1;
    try {
      const webhook = limits.webhookBaseUrl
        ? `${limits.webhookBaseUrl}/${encodeURIComponent(workflowInfo().workflowId)}`
        : undefined;
      const attempt = s.attempts[index] ?? 1;
      const summary = `submit items[${shard.offset + index}]${attempt > 1 ? `, attempt ${attempt}` : ''}`;
      const { taskId, calls } = await submitItem.executeWithOptions({ summary }, [
        {
          plan,
          index: shard.offset + index,
          attempt,
          ...(webhook ? { webhook } : {}),
          ...(limits.deadlineAt !== undefined ? { notAfter: limits.deadlineAt } : {}),
        },
      ]);
      s.apiCalls.submit += calls ?? 1;
      s.taskIds[index] = taskId;
      submittedAt[index] = Date.now();
      indexByTask.set(taskId, index);
      processing.delete(index); // a resubmitted item starts over
      s.phase[index] = Phase.submitted;
      const webhookFirst = early.get(taskId);
      if (webhookFirst) {
        early.delete(taskId);
        learnFinished(webhookFirst);
      }
    } catch (error) {
      const failure = failureSummary(error);
      if (failure.type === 'DeadlinePassed') {
        // Never sent: the item ends as `deadline` with the others not submitted.
        requeueUntried(index);
        return;
      }
      if (failure.type !== 'ApiNotConfigured') s.apiCalls.submit++; // the API answered, with a refusal
      const reason = accountRefusal(failure);
      if (reason !== undefined) {
        // The account, not the item: nothing else would be accepted either. Pause the whole run
        // with nothing marked failed; `resume` submits again.
        requeueUntried(index);
        s.paused = true;
        await getExternalWorkflowHandle(input.runId).signal(pauseSignal, { reason });
        return;
      }
      finish(index, 'failed', failure);
    } finally {
      pendingSubmits--;
    }
  }

  /** Time until the run's deadline; undefined when it has none. */
  const untilDeadline = (): number | undefined =>
    limits.deadlineAt === undefined ? undefined : Math.max(0, limits.deadlineAt - Date.now());

  async function submitLane(): Promise<void> {
    if (limits.allowance !== undefined && s.estimates === null) {
      s.estimates = (await planShard({ plan, offset: shard.offset, count: shard.count })).credits;
    }
    for (;;) {
      const ready = (): boolean =>
        draining || s.cancelled || atApi() + count(Phase.queued) === 0 || canSubmit();
      const left = untilDeadline();
      if (left === undefined) {
        await condition(ready);
      } else if (left === 0 || !(await condition(ready, left))) {
        // The deadline wakes the lane too: from then on nothing is submitted.
        s.deadlinePassed = true;
        stopReason = 'deadline passed';
        return;
      }
      if (draining || s.cancelled || atApi() + count(Phase.queued) === 0) return;
      const index = s.phase.indexOf(Phase.queued);
      if (
        limits.allowance !== undefined &&
        committedCredits() + (s.estimates?.[index] ?? 0) > limits.allowance
      ) {
        s.budgetStopped = true;
        stopReason = 'budget exhausted';
        return;
      }
      s.phase[index] = Phase.submitting;
      pendingSubmits++;
      spawn(submitOne(index));
    }
  }

  /**
   * Tells the run once every item has been submitted, so that it starts the next shard now rather
   * than when this one's last tasks are stored (workflows/in-flight-shares.ts). What is at the API
   * then is all this shard can ever hold again: a resubmit reuses the failed item's slot.
   */
  async function handOffWhenSubmitted(): Promise<void> {
    if (!limits.handOff || s.handedOff) return;
    await condition(
      () => draining || s.cancelled || !workLeft() || (count(Phase.queued) === 0 && pendingSubmits === 0),
    );
    if (draining || s.cancelled || !workLeft()) return;
    s.handedOff = true;
    const handoff = { workflowId: workflowInfo().workflowId, holding: atApi() };
    // Only a run that is gone refuses it, and then nothing waits for this shard's slots.
    await getExternalWorkflowHandle(input.runId)
      .signal(shardSubmittedSignal, handoff)
      .catch(() => undefined);
  }

  // ----- tracking -----

  async function pollLane(): Promise<void> {
    for (;;) {
      await condition(() => draining || !workLeft() || count(Phase.submitted) > 0);
      if (draining || !workLeft()) return;
      // An interruptible sleep: continue-as-new must not wait for a whole poll interval, nor a shard
      // whose tasks webhooks have all reported (without webhooks only this lane empties `submitted`).
      // The lookup's time is carried over continue-as-new, so the next run keeps the pace rather
      // than starting a whole interval over.
      // A task about to be overdue is looked up when it is, not up to a whole interval later;
      // never sooner than the shortest interval (overdue tasks must not set off lookups back to
      // back), so that there is always a timer, as in the histories of earlier versions.
      const overdueAt =
        limits.taskTimeoutMs === undefined
          ? Number.POSITIVE_INFINITY
          : firstOverdueAt(s.phase, submittedAt, limits.taskTimeoutMs);
      const now = Date.now();
      s.nextLookupAt ??= Math.min(now + s.pollMs, Math.max(overdueAt, now + poll.minMs));
      const waitMs = s.nextLookupAt - Date.now();
      if (waitMs > 0 && (await condition(() => draining || count(Phase.submitted) === 0, waitMs)) && draining)
        return;
      s.nextLookupAt = undefined;
      const ids: string[] = [];
      const indices: number[] = [];
      s.phase.forEach((phase, index) => {
        if (phase === Phase.submitted) {
          ids.push(s.taskIds[index] ?? '');
          indices.push(index);
        }
      });
      if (ids.length === 0) continue;
      const { statuses, calls } = await lookupTasks.executeWithOptions(
        { summary: `look up ${plural(ids.length, 'task')}` },
        [{ plan, taskIds: ids }],
      );
      s.apiCalls.lookup += calls ?? 1;
      let finished = 0;
      statuses.forEach((status, k) => {
        const index = indices[k] ?? -1;
        if (s.phase[index] !== Phase.submitted) return; // a webhook got there first
        if (status === 'completed' || status === 'failed') {
          finished++;
          s.phase[index] = Phase.storing;
          collectQueue.push(index);
          return;
        }
        const lost = lostTaskError(status);
        if (lost) {
          finished++;
          finish(index, lost.code === 'task_expired' ? 'expired' : 'failed', lost);
        } else if (status === 'processing') {
          processing.add(index);
        } else if (status !== 'pending') {
          log.warn('unknown task status; treating it as not finished yet', { taskId: ids[k], status });
        }
      });
      confirmOverdue();
      const submitting = !s.paused && !s.cancelled && count(Phase.queued) > 0;
      const target = lookupTarget(limits.maxInFlight, submitting ? undefined : count(Phase.submitted));
      s.pollMs = nextPollDelay(s.pollMs, finished, target, poll.minMs, poll.maxMs);
      if (submitting) s.busyPollMs = s.pollMs;
    }
  }

  /**
   * Tasks unfinished past limits.task_timeout. A lookup's word is not enough to abandon a task
   * (and pay for it again): one garbled answer reads as a status pixelmill does not know. So
   * each goes to the collect lane, whose GET either finds it finished or confirms it is not.
   */
  function confirmOverdue(): void {
    if (limits.taskTimeoutMs === undefined) return;
    const overdue = overdueItems(s.phase, submittedAt, Date.now(), limits.taskTimeoutMs);
    if (overdue.length === 0) return;
    const confirm = patched(CONFIRM_OVERDUE_PATCH);
    for (const index of overdue) {
      processing.delete(index);
      if (!confirm) {
        giveUp(index);
        continue;
      }
      confirming.add(index);
      s.phase[index] = Phase.storing;
      collectQueue.push(index);
    }
  }

  /** Gives up an overdue task: resubmitted if the retry policy says so, else failed. */
  function giveUp(index: number): void {
    const error = taskTimedOut(s.taskIds[index] ?? null, limits.taskTimeoutMs ?? 0);
    s.givenUp = (s.givenUp ?? 0) + 1;
    if (shouldResubmit(error, s.attempts[index] ?? 1, limits.retry)) {
      s.phase[index] = Phase.queued;
      s.taskIds[index] = null;
      submittedAt[index] = null;
    } else {
      finish(index, 'failed', error);
    }
  }

  // ----- collecting -----

  /** The task's terminal state: from a webhook, else from a GET. */
  async function resultOf(index: number): Promise<KnownResult> {
    const fromWebhook = known.get(index);
    if (fromWebhook) return fromWebhook;
    const taskId = s.taskIds[index] ?? '';
    const fetched = await fetchTask.executeWithOptions({ summary: `fetch task ${taskId}` }, [
      { plan, taskId },
    ]);
    s.apiCalls.get += fetched.calls ?? 1;
    return fetched;
  }

  async function collectBatch(batch: number[]): Promise<void> {
    const toStore: StoreRequest[] = [];
    await Promise.all(
      batch.map(async (index) => {
        let result: KnownResult;
        try {
          result = await resultOf(index);
        } catch (error) {
          return finish(index, 'failed', failureSummary(error));
        }
        known.delete(index);
        const overdue = confirming.delete(index);
        // A task still running shows its reservation, which is not a charge yet.
        if (result.status === 'completed' || result.status === 'failed')
          s.credits[index] = result.creditsCost ?? 0;
        if (result.status === 'completed' && result.urls?.length) {
          toStore.push({
            index: shard.offset + index,
            taskId: s.taskIds[index] ?? '',
            urls: result.urls,
            attempts: s.attempts[index] ?? 1,
            creditsCost: result.creditsCost ?? 0,
          });
        } else if (result.status === 'failed') {
          s.credits[index] = 0;
          if (shouldResubmit(result.error, s.attempts[index] ?? 1, limits.retry)) {
            s.phase[index] = Phase.queued;
            s.taskIds[index] = null;
          } else {
            finish(
              index,
              'failed',
              result.error ?? {
                type: 'GenerationFailed',
                code: 'failed',
                message: 'the task failed without an error',
              },
            );
          }
        } else if (lostTaskError(result.status)) {
          const lost = lostTaskError(result.status)!;
          finish(index, lost.code === 'task_expired' ? 'expired' : 'failed', lost);
        } else if (overdue) {
          giveUp(index); // the GET confirms it: still unfinished past limits.task_timeout
        } else {
          s.phase[index] = Phase.submitted; // not terminal after all (or no URLs yet): keep polling
        }
      }),
    );
    if (toStore.length === 0) return;
    try {
      const { items } = await storeResults.executeWithOptions(
        { summary: `store ${toStore.length} results` },
        [{ plan, shard: shard.index, items: toStore }],
      );
      for (const item of items) {
        const index = item.index - shard.offset;
        if (item.status === 'completed') {
          s.phase[index] = Phase.completed;
          s.images += item.images;
        } else {
          finish(index, item.status, item.error ?? null);
        }
      }
    } catch (error) {
      const failure = failureSummary(error);
      for (const item of toStore) finish(item.index - shard.offset, 'failed', failure);
    }
  }

  async function collectLane(): Promise<void> {
    for (;;) {
      await condition(
        () => draining || !workLeft() || (collectQueue.length > 0 && collectBatches < MAX_COLLECT_BATCHES),
      );
      if (draining || !workLeft()) return;
      const batch = collectQueue.splice(0, COLLECT_BATCH);
      collectBatches++;
      spawn(collectBatch(batch).finally(() => void collectBatches--));
    }
  }

  await Promise.all([
    submitLane().finally(() => void (submitLaneDone = true)),
    handOffWhenSubmitted(),
    pollLane(),
    collectLane(),
  ]);
  while (inFlight.size > 0) await Promise.all([...inFlight]);

  const submittable = !s.cancelled && !s.budgetStopped && !s.deadlinePassed;
  if (draining && (atApi() > 0 || (count(Phase.queued) > 0 && submittable))) {
    if (s.outcomes.length) await recordOutcomes({ plan, shard: shard.index, outcomes: s.outcomes.splice(0) });
    publish(true);
    return continueAsNew<typeof shardWorkflow>({
      ...input,
      paused: s.paused,
      cancelled: s.cancelled,
      carried: s,
    });
  }

  // Nothing is at the API any more: what was never submitted ends here.
  let endedByDeadline = 0;
  s.phase.forEach((phase, index) => {
    if (phase !== Phase.queued) return;
    if (s.deadlinePassed && limits.deadlineAt !== undefined) {
      endedByDeadline++;
      finish(index, 'cancelled', deadlineError(limits.deadlineAt));
    } else if (s.cancelled)
      finish(index, 'cancelled', {
        type: 'Cancelled',
        code: 'cancelled',
        message: 'the run was cancelled before this item was submitted',
      });
    else
      finish(index, 'skipped', {
        type: 'BudgetExhausted',
        code: 'budget_exhausted',
        message: `submitting it would exceed the run's budget_credits`,
      });
  });
  if (s.outcomes.length) await recordOutcomes({ plan, shard: shard.index, outcomes: s.outcomes.splice(0) });
  publish(true);
  const { counts, creditsSpent: spent, apiCalls, images, tasksGivenUp } = progress();
  return {
    shard: shard.index,
    counts,
    creditsSpent: spent,
    apiCalls,
    images,
    ...(stopReason ? { stopReason } : {}),
    ...(s.busyPollMs !== undefined ? { pollMs: s.busyPollMs } : {}),
    ...(endedByDeadline > 0 ? { endedByDeadline } : {}),
    ...(tasksGivenUp ? { tasksGivenUp } : {}),
  };
}
