// A shard's submit lane: queued items go to the provider in slices (activities/submit-slice.ts)
// under the shard's share of `max_in_flight`, its budget and the run's deadline; each item is told
// its outcome. An item the API refuses for good fails; a refusal of the account (a key refused, no
// credits) pauses the whole run instead; a failure a retry may heal is retried alone.
import { condition, getExternalWorkflowHandle, log, workflowInfo } from '@temporalio/workflow';
import { pauseSignal } from '../common/names.js';
import { FailureType } from '../common/failure-types.js';
import type { CarriedSubmit, ErrorSummary } from '../common/types.js';
import { plural } from '../common/words.js';
import { historyFull, type ShardContext } from './shard-context.js';
import * as cap from './concurrency-cap.js';
import { ShardSlots } from './shard-slots.js';
import { nextWouldExceed } from './shard-credits.js';
import { accountRefusal, failureSummary, finishesPushed, Phase } from './tracking.js';

/** Bounds on pending activities (Temporal wants at most a few hundred per workflow). */
const MAX_PENDING_SUBMITS = 100;
/**
 * Items per submitSlice activity: at most half the submits a shard keeps scheduled (about 1.5 s
 * of the run's rate, run-shards.ts), so that one slice is scheduled while another submits and the
 * calls never wait for a dispatch; at most this many (BENCHMARKS.md, capacity: slice sizes).
 */
export const MAX_SLICE = 50;
/** Tasks one cancelTasks activity asks about and cancels (two calls each, in their turns). */
const CANCEL_SLICE = 25;

export class SubmitLane {
  #pending = 0;
  readonly #slots: ShardSlots;
  readonly #maxPending: number;
  readonly #sliceSize: number;
  /** Where and until when the shard's items are submitted. */
  readonly #target: { webhook?: string; follow?: boolean; notAfter?: number };

  constructor(private readonly ctx: ShardContext) {
    const { limits } = ctx;
    this.#slots = new ShardSlots(ctx);
    this.#maxPending = limits.maxPendingSubmits ?? MAX_PENDING_SUBMITS;
    this.#sliceSize = Math.max(1, Math.min(MAX_SLICE, Math.ceil(this.#maxPending / 2)));
    this.#target = {
      ...(limits.webhookBaseUrl
        ? { webhook: `${limits.webhookBaseUrl}/${encodeURIComponent(workflowInfo().workflowId)}` }
        : limits.statusStreams
          ? { follow: true }
          : {}),
      ...(limits.deadlineAt !== undefined ? { notAfter: limits.deadlineAt } : {}),
    };
  }

  canSubmit(): boolean {
    const { s, items, limits } = this.ctx;
    return (
      !s.paused &&
      items.count(Phase.queued) > 0 &&
      items.atApi() < limits.maxInFlight &&
      this.#slots.free() &&
      this.#pending < this.#maxPending
    );
  }

  #overBudget(): boolean {
    const { allowance } = this.ctx.limits;
    return allowance !== undefined && nextWouldExceed(this.ctx.s, allowance);
  }

  /** Submits until nothing is left to submit, the shard stops, or the budget or deadline ends it. */
  async run(): Promise<void> {
    const { s, items, limits, runCheck } = this.ctx;
    if (limits.concurrency) {
      const polledRefusals = limits.concurrency.refused && !finishesPushed(limits);
      const { start, handed } = limits.concurrency;
      s.concurrency ??= handed
        ? cap.handedCap(handed.cap, items.doneAtProvider(), polledRefusals)
        : cap.startCap(start, items.doneAtProvider(), polledRefusals);
    }
    if (limits.allowance !== undefined && s.estimates === null) {
      const { offset, count, indices } = this.ctx.input.shard;
      const plan = this.ctx.input.plan;
      s.estimates = (
        await this.ctx.activities.planShard({ plan, offset, count, ...(indices ? { indices } : {}) })
      ).credits;
    }
    const nothingToSubmit = (): boolean =>
      (this.ctx.draining && this.ctx.othersEnded) ||
      s.cancelled ||
      items.atApi() + items.count(Phase.queued) === 0;
    const deadlinePassed = (): void => {
      s.deadlinePassed = true;
      this.ctx.stopReason = 'deadline passed';
      if (limits.cancel) this.ctx.spawn(this.#cancelNotStarted());
    };
    for (;;) {
      // A pause arms the paused shard's run check (its wait has no other end).
      const pausedAtWait = s.paused;
      // A slot taken as freed by a task's age, or a refusal's hold ending, is no event: a timer
      // wakes the lane for it, set again when a refusal or a requeue brings that moment closer.
      const wakeAtWait = this.#slots.wakeAtMs();
      const ready = (): boolean =>
        nothingToSubmit() ||
        this.canSubmit() ||
        s.paused !== pausedAtWait ||
        this.#slots.wakeAtMs() < wakeAtWait;
      const left = limits.deadlineAt === undefined ? undefined : Math.max(0, limits.deadlineAt - Date.now());
      // The deadline wakes the lane too: from then on nothing is submitted.
      if (left === 0) return deadlinePassed();
      const pausedWait = s.paused ? runCheck.pausedWaitMs() : undefined;
      const waitMs = left === undefined ? pausedWait : Math.min(left, pausedWait ?? left);
      const releaseMs = wakeAtWait - Date.now();
      if (Number.isFinite(releaseMs) && (waitMs === undefined || releaseMs < waitMs)) {
        if (!(await condition(ready, Math.max(1, Math.ceil(releaseMs))))) continue;
      } else if (waitMs === undefined) {
        await condition(ready);
      } else if (!(await condition(ready, waitMs))) {
        if (waitMs === left) return deadlinePassed();
        await this.#checkRun();
        // A shard paused for days continues as new on its checks alone.
        if (historyFull(limits)) this.ctx.draining = true;
        continue;
      }
      if (nothingToSubmit()) return;
      if (!this.canSubmit()) continue;
      if (runCheck.due()) {
        await this.#checkRun();
        continue;
      }
      if (this.#overBudget()) {
        s.budgetStopped = true;
        this.ctx.stopReason = 'budget exhausted';
        return;
      }
      const slice: { index: number; attempt: number }[] = [];
      do {
        slice.push(items.startSubmit());
        this.#pending++;
      } while (slice.length < this.#sliceSize && this.canSubmit() && !this.#overBudget());
      this.#slots.sent();
      this.ctx.spawn(this.#submitSlice(slice));
    }
  }

  /**
   * At the deadline: the provider cancels what it has not started, so that it neither runs nor
   * bills; a slice at a time, each activity within its calls' time limit.
   */
  async #cancelNotStarted(): Promise<void> {
    const { s, items, activities, input } = this.ctx;
    const indices = items.notStarted();
    s.cancelledAtDeadline = [...(s.cancelledAtDeadline ?? []), ...indices];
    for (let at = 0; at < indices.length; at += CANCEL_SLICE) {
      const slice = indices.slice(at, at + CANCEL_SLICE);
      const { calls } = await activities.cancelTasks.executeWithOptions(
        { summary: `cancel ${plural(slice.length, 'task')} not started by the deadline` },
        [{ plan: input.plan, taskIds: slice.map((index) => items.taskIdOf(index)) }],
      );
      s.apiCalls.lookup += calls ?? 0;
    }
  }

  /** A run that refuses the shard's signal is gone: its shard submits nothing more, as if cancelled. */
  async #checkRun(): Promise<void> {
    if (await this.ctx.runCheck.check()) return;
    log.warn('the run is gone (terminated?): nothing more is submitted', { run: this.ctx.input.runId });
    this.ctx.s.cancelled = true;
    this.ctx.stopReason = 'its run ended';
  }

  /**
   * A submit that failed for good. Past the deadline it was never sent: it ends as `deadline`
   * with the others not submitted. A refusal of the account, not the item (nothing else would be
   * accepted either), pauses the whole run with nothing marked failed: returns why; `resume`
   * submits again.
   */
  #failed(index: number, failure: ErrorSummary): string | undefined {
    const { items, s } = this.ctx;
    if (failure.type === FailureType.DeadlinePassed) return void items.requeueUntried(index);
    const reason = accountRefusal(failure);
    if (reason === undefined) return void items.finish(index, 'failed', failure);
    items.requeueUntried(index);
    s.paused = true;
    return reason;
  }

  async #pauseRun(reason: string | undefined): Promise<void> {
    if (reason !== undefined)
      await getExternalWorkflowHandle(this.ctx.input.runId).signal(pauseSignal, { reason });
  }

  /** The task the API accepted last for the shard, for a refused-or-not decision's probe. */
  #probe(): { probeTaskId?: string } {
    const taskId = this.ctx.items.latestTaskId();
    return taskId === undefined ? {} : { probeTaskId: taskId };
  }

  /** One item alone, with Temporal's retries: a slice's item whose submit may heal (`carriesOn` its call). */
  async #submitOne(index: number, attempt: number, carriesOn: CarriedSubmit): Promise<void> {
    const { at, s, items, activities, input } = this.ctx;
    try {
      const summary = `submit items[${at.plan(index)}]${attempt > 1 ? `, attempt ${attempt}` : ''}`;
      const { taskId, calls, creditsCost } = await activities.submitItem.executeWithOptions({ summary }, [
        { plan: input.plan, index: at.plan(index), attempt, carriesOn, ...this.#probe(), ...this.#target },
      ]);
      s.apiCalls.submit += calls ?? 1;
      items.submitted(index, taskId, Date.now(), creditsCost);
    } catch (error) {
      const failure = failureSummary(error);
      // The API answered, with a refusal, unless the submit was never sent.
      if (failure.type !== FailureType.ApiNotConfigured && failure.type !== FailureType.ReferencesUnhosted)
        s.apiCalls.submit++;
      await this.#pauseRun(this.#failed(index, failure));
    } finally {
      this.#pending--;
    }
  }

  /** A slice of queued items in one activity (activities/submit-slice.ts), each told its outcome. */
  async #submitSlice(slice: { index: number; attempt: number }[]): Promise<void> {
    const { at, s, items, activities, input } = this.ctx;
    let retriedAlone = 0;
    const sentAtMs = Date.now();
    let refusal: string | undefined;
    try {
      const first = at.plan(slice[0]!.index);
      const { items: outcomes, calls } = await activities.submitSlice.executeWithOptions(
        { summary: `submit ${plural(slice.length, 'item')} from items[${first}]` },
        [
          {
            plan: input.plan,
            items: slice.map(({ index, attempt }) => ({ index: at.plan(index), attempt })),
            ...this.#target,
          },
        ],
      );
      s.apiCalls.submit += calls ?? 0;
      const answeredAt = Date.now();
      const attempts = new Map(slice.map(({ index, attempt }) => [index, attempt]));
      let overConcurrency = false;
      const ahead: number[] = [];
      for (const outcome of outcomes) {
        const index = at.local(outcome.index);
        overConcurrency ||= outcome.overConcurrency === true;
        if (outcome.queuePosition !== undefined) ahead.push(outcome.queuePosition);
        if (outcome.taskId !== undefined)
          items.submitted(index, outcome.taskId, answeredAt, outcome.creditsCost);
        else if (outcome.failure !== undefined) refusal = this.#failed(index, outcome.failure) ?? refusal;
        else if (outcome.retryAs === undefined) items.requeueUntried(index);
        else {
          retriedAlone++;
          this.ctx.spawn(this.#submitOne(index, attempts.get(index) ?? 1, outcome.retryAs));
        }
      }
      this.#slots.answered(overConcurrency, ahead, { sentAtMs, nowMs: answeredAt });
    } catch (error) {
      // Only a failure of the slice as a whole (the plan, the API's settings) gets here.
      const failure = failureSummary(error);
      for (const { index } of slice) refusal = this.#failed(index, failure) ?? refusal;
    } finally {
      this.#pending -= slice.length - retriedAlone;
    }
    await this.#pauseRun(refusal);
  }
}
