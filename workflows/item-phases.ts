// What every item of a shard is at (its phase), counted as it moves, and the rules that end an
// item or send it back to the queue: by its result, by what the store did with its images, by the
// retry policy. Pure bookkeeping, like ShardItems (shard-items.ts), which adds what the lanes
// learn from the provider (submits, lookups, webhooks) and hands results to these rules.
import type {
  ErrorSummary,
  ItemStatus,
  ShardCarriedState,
  ShardLimits,
  ShardSpec,
  StoreRequest,
  StoreResultsOutput,
  TaskResult,
} from '../common/types.js';
import { FailureType } from '../common/failure-types.js';
import { storeRequestOf } from '../common/store-request.js';
import { taskIdOf } from '../common/task-ref.js';
import {
  FINAL_PHASE,
  firstOverdueAt,
  lostTaskError,
  Phase,
  shouldResubmit,
  taskTimedOut,
  type PhaseValue,
} from './tracking.js';

const FAILED_WITHOUT_ERROR: ErrorSummary = {
  type: FailureType.GenerationFailed,
  code: 'failed',
  message: 'the task failed without an error',
};

export class ItemPhases {
  readonly #byPhase: number[] = new Array<number>(Object.keys(Phase).length).fill(0);
  protected readonly submittedAt: (number | null)[];

  constructor(
    /** Carried over continue-as-new as it is: every field that must survive lives here. */
    readonly state: ShardCarriedState,
    /** Where the shard's items are in the plan. */
    protected readonly at: ShardIndices,
    /** The shard's limits (the run may raise maxInFlight while it runs). */
    protected readonly limits: ShardLimits,
  ) {
    this.submittedAt = state.submittedAt ??= new Array<number | null>(state.phase.length).fill(null);
    for (const phase of state.phase) this.#byPhase[phase]!++;
  }

  // ----- counts -----

  count(phase: PhaseValue): number {
    return this.#byPhase[phase] ?? 0;
  }

  /** Items the API has (or is being asked to take), including those whose images are being stored. */
  atApi(): number {
    return this.count(Phase.submitting) + this.count(Phase.submitted) + this.count(Phase.storing);
  }

  /** Items the provider is done with: final, or their images being stored (concurrency-cap.ts). */
  doneAtProvider(): number {
    return this.finalCount() + this.count(Phase.storing);
  }

  /** Items in a final state. */
  finalCount(): number {
    return this.state.phase.length - this.notFinal();
  }

  /** Items not final yet: at the API, or queued (never submitted, or to be submitted again). */
  notFinal(): number {
    return this.atApi() + this.count(Phase.queued);
  }

  /** Something is left to do: at the API, or queued while submitting goes on. */
  workLeft(submitting: boolean): boolean {
    return this.atApi() > 0 || (submitting && this.count(Phase.queued) > 0);
  }

  /** When the first task at the API passes limits.task_timeout; Infinity when none can. */
  firstOverdueAt(): number {
    const timeoutMs = this.limits.taskTimeoutMs;
    return timeoutMs === undefined
      ? Number.POSITIVE_INFINITY
      : firstOverdueAt(this.state.phase, this.submittedAt, timeoutMs);
  }

  /** The item's index in the plan. */
  planIndexOf(index: number): number {
    return this.at.plan(index);
  }

  taskIdOf(index: number): string {
    return this.state.taskIds[index] ?? '';
  }

  // ----- ending -----

  /** Back in the queue as if this attempt had not been made: the API did not take it. */
  requeueUntried(index: number): void {
    this.move(index, Phase.queued);
    this.state.attempts[index] = (this.state.attempts[index] ?? 1) - 1;
  }

  /** Ends the item (anything but completed) and records its outcome. */
  finish(index: number, status: Exclude<ItemStatus, 'completed'>, error: ErrorSummary | null): void {
    this.move(index, FINAL_PHASE[status]);
    this.state.outcomes.push({
      index: this.at.plan(index),
      status,
      taskId: this.state.taskIds[index] ?? null,
      attempts: this.state.attempts[index] ?? 0,
      creditsCost: this.state.credits[index] ?? 0,
      error,
    });
  }

  /** Ends every item never submitted, as the reason for stopping says; returns those the deadline ended. */
  endUnsubmitted(reason: { deadline?: ErrorSummary; cancelled: boolean }): number {
    let endedByDeadline = 0;
    this.state.phase.forEach((phase, index) => {
      if (phase !== Phase.queued) return;
      if (reason.deadline) {
        endedByDeadline++;
        this.finish(index, 'cancelled', reason.deadline);
      } else if (reason.cancelled) {
        this.finish(index, 'cancelled', {
          type: FailureType.Cancelled,
          code: 'cancelled',
          message: 'the run was cancelled before this item was submitted',
        });
      } else {
        this.finish(index, 'skipped', {
          type: FailureType.BudgetExhausted,
          code: 'budget_exhausted',
          message: `submitting it would exceed the run's budget_credits`,
        });
      }
    });
    return endedByDeadline;
  }

  // ----- results -----

  /**
   * The item's task as a GET or webhook told it, `overdue` when the GET was to confirm it is
   * unfinished past limits.task_timeout. Returns what to store when it completed with images;
   * otherwise the item is resubmitted, ended, given up, or polled again.
   */
  protected settleAs(index: number, result: TaskResult, overdue: boolean): StoreRequest | undefined {
    // A task still running shows its reservation, which is not a charge yet.
    if (result.status === 'completed' || result.status === 'failed')
      this.state.credits[index] = result.creditsCost ?? this.state.credits[index] ?? 0;
    const lost = lostTaskError(result.status);
    const request = storeRequestOf(this.task(index), result);
    if (request) {
      return request;
    } else if (result.status === 'failed' && this.state.cancelledAtDeadline?.includes(index)) {
      // Cancelled at the provider because the deadline passed before it started.
      this.state.credits[index] = 0;
      this.finish(index, 'cancelled', {
        type: FailureType.DeadlinePassed,
        code: 'deadline',
        message: `the run's deadline (limits.deadline) passed before the provider started it; it was cancelled there (${result.error?.message ?? 'cancelled'})`,
      });
    } else if (result.status === 'failed') {
      // Failed tasks count as refunded: the first API and BFL refund them; fal and Replicate are estimated.
      this.state.credits[index] = 0;
      if (this.resubmits(index, result.error)) this.requeue(index);
      else this.finish(index, 'failed', result.error ?? FAILED_WITHOUT_ERROR);
    } else if (lost) {
      this.lost(index, lost);
    } else if (overdue) {
      this.giveUp(index); // the GET confirms it: still unfinished past limits.task_timeout
    } else {
      this.move(index, Phase.submitted); // not terminal after all (or no URLs yet): keep polling
    }
    return undefined;
  }

  /** What the store activity did with the items sent to it. */
  stored(items: StoreResultsOutput['items']): void {
    for (const item of items) {
      const index = this.at.local(item.index);
      if (item.status === 'completed') {
        this.move(index, Phase.completed);
        this.state.images += item.images;
      } else if (item.status === 'expired' && this.resubmits(index, item.error)) {
        // Deleted by the provider before it was stored (its retention): generated again, as the
        // retry policy says. The lost task was charged all the same.
        this.resubmitLost(index);
      } else if (item.error?.type === FailureType.ImageCheckFailed && this.resubmits(index, item.error)) {
        // Its images failed a check the retry policy names: generated again. The rejected task
        // was charged all the same.
        this.state.checkRejected = (this.state.checkRejected ?? 0) + 1;
        this.state.checkRejectedCredits =
          (this.state.checkRejectedCredits ?? 0) + (this.state.credits[index] ?? 0);
        this.state.credits[index] = 0;
        this.requeue(index);
      } else {
        this.finish(index, item.status, item.error ?? null);
      }
    }
  }

  /** The store activity failed for all of `requests`. */
  storeFailed(requests: readonly StoreRequest[], failure: ErrorSummary): void {
    for (const request of requests) this.finish(this.at.local(request.index), 'failed', failure);
  }

  // ----- internals -----

  /** The item's task: its plan index, task id and submissions. */
  protected task(
    index: number,
  ): Pick<StoreRequest, 'index' | 'taskId' | 'attempts'> & { creditsCost?: number } {
    const announced = this.state.credits[index];
    return {
      index: this.at.plan(index),
      taskId: this.taskIdOf(index),
      attempts: this.state.attempts[index] ?? 1,
      // What the provider said at submit the task costs (BFL), for its outcome line.
      ...(announced ? { creditsCost: announced } : {}),
    };
  }

  protected move(index: number, phase: PhaseValue): void {
    const from = this.state.phase[index]!;
    this.#byPhase[from]!--;
    this.#byPhase[phase]!++;
    this.state.phase[index] = phase;
  }

  protected requeue(index: number): void {
    this.move(index, Phase.queued);
    this.state.taskIds[index] = null;
    this.submittedAt[index] = null;
  }

  protected resubmits(index: number, error: ErrorSummary | undefined): boolean {
    return shouldResubmit(error, this.state.attempts[index] ?? 1, this.limits.retry);
  }

  /** A task the provider no longer has (expired, not found): resubmitted if the retry policy says so. */
  protected lost(index: number, error: ErrorSummary): void {
    if (this.resubmits(index, error)) this.resubmitLost(index);
    else this.finish(index, error.code === 'task_expired' ? 'expired' : 'failed', error);
  }

  /** Requeues an item whose task's result is gone, keeping what that task cost in the totals. */
  protected resubmitLost(index: number): void {
    this.state.lostCredits = (this.state.lostCredits ?? 0) + (this.state.credits[index] ?? 0);
    this.state.credits[index] = 0;
    this.requeue(index);
  }

  /** Gives up an overdue task: resubmitted if the retry policy says so, else failed. */
  protected giveUp(index: number): void {
    const ref = this.state.taskIds[index];
    const error = taskTimedOut(ref ? taskIdOf(ref) : null, this.limits.taskTimeoutMs ?? 0);
    this.state.givenUp = (this.state.givenUp ?? 0) + 1;
    if (this.resubmits(index, error)) this.requeue(index);
    else this.finish(index, 'failed', error);
  }
}

/** Between a shard's own item numbers (0 to count - 1) and their indices in the plan. */
export class ShardIndices {
  readonly #local: Map<number, number> | undefined;

  constructor(private readonly spec: Pick<ShardSpec, 'offset' | 'indices'>) {
    this.#local = spec.indices && new Map(spec.indices.map((planIndex, local) => [planIndex, local]));
  }

  plan(local: number): number {
    return this.spec.indices ? this.spec.indices[local]! : this.spec.offset + local;
  }

  local(planIndex: number): number {
    return this.#local ? this.#local.get(planIndex)! : planIndex - this.spec.offset;
  }
}
