// The items of one shard and the rules that move them from queued to final: pure bookkeeping,
// with no Temporal calls and no clock of its own, so it is unit-tested without a server
// (test/shard-items.test.ts). The shard workflow (shard.ts) runs the lanes and the activities
// and tells this class what each answer was. Counts by phase are kept as items move, so the
// lanes' conditions cost nothing however often they are evaluated.
import type {
  CollectedItem,
  CollectRequest,
  ErrorSummary,
  ItemCounts,
  ItemStatus,
  ShardCarriedState,
  ShardLimits,
  ShardSpec,
  StoreRequest,
  StoreResultsOutput,
  TaskFinishedSignal,
  TaskResult,
} from '../common/types.js';
import { FailureType } from '../common/failure-types.js';
import { storeRequestOf } from '../common/store-request.js';
import { taskIdOf } from '../common/task-ref.js';
import {
  countItems,
  FINAL_PHASE,
  firstOverdueAt,
  lostTaskError,
  overdueItems,
  Phase,
  shouldResubmit,
  taskTimedOut,
  type PhaseValue,
} from './tracking.js';

/**
 * Lookup answers that mean "not finished yet" without a word worth logging: pending, a task whose
 * own call failed in a lookup of several (activities/task-lookups.ts), and a BFL task its global
 * host does not find (another region may hold it: providers/bfl/client.ts).
 */
const NOT_FINISHED = new Set(['pending', 'unanswered', 'unlocated']);

/** Webhooks kept for tasks whose submit has not returned yet (fast tasks outrun the activity result). */
export const MAX_EARLY_WEBHOOKS = 1_000;

const FAILED_WITHOUT_ERROR: ErrorSummary = {
  type: FailureType.GenerationFailed,
  code: 'failed',
  message: 'the task failed without an error',
};

export class ShardItems {
  readonly #byPhase: number[] = new Array<number>(Object.keys(Phase).length).fill(0);
  readonly #indexByTask = new Map<string, number>();
  /** Results learned from webhooks: their items skip the GET. Not carried over continue-as-new. */
  readonly #known = new Map<number, TaskResult>();
  /** Webhooks for task ids not known yet: applied when their submit returns. Not carried over either. */
  readonly #early = new Map<string, TaskFinishedSignal>();
  /** Items the last lookup said were being generated: display only (the next lookup refills it). */
  readonly #processing = new Set<number>();
  /** Items the last lookup said were waiting to start (pending): what a deadline may cancel. */
  readonly #waiting = new Set<number>();
  /** Overdue items whose GET decides whether they are given up (see overdue()). */
  readonly #confirming = new Set<number>();
  /** Items whose task is finished, waiting for the collect lane. */
  readonly #toCollect: number[] = [];
  readonly #submittedAt: (number | null)[];
  /** The task the API accepted last in this execution. */
  #latestTaskId: string | undefined;

  constructor(
    /** Carried over continue-as-new as it is: every field that must survive lives here. */
    readonly state: ShardCarriedState,
    /** Where the shard's items are in the plan. */
    private readonly at: ShardIndices,
    /** The shard's limits (the run may raise maxInFlight while it runs). */
    private readonly limits: ShardLimits,
  ) {
    this.#submittedAt = state.submittedAt ??= new Array<number | null>(state.phase.length).fill(null);
    state.phase.forEach((phase, index) => {
      this.#byPhase[phase]!++;
      const taskId = state.taskIds[index];
      if (taskId) this.#indexByTask.set(taskIdOf(taskId), index);
      if (phase === Phase.storing) this.#toCollect.push(index);
    });
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

  counts(): ItemCounts {
    return countItems(this.state.phase, this.#processing);
  }

  /** When the first task at the API passes limits.task_timeout; Infinity when none can. */
  firstOverdueAt(): number {
    const timeoutMs = this.limits.taskTimeoutMs;
    return timeoutMs === undefined
      ? Number.POSITIVE_INFINITY
      : firstOverdueAt(this.state.phase, this.#submittedAt, timeoutMs);
  }

  // ----- submitting -----

  /**
   * Items at the provider that its last lookup said had not started: what a deadline cancels. A
   * task no lookup has seen yet may be generating already, and is collected as it finishes.
   */
  notStarted(): number[] {
    return [...this.#waiting].filter((index) => this.state.phase[index] === Phase.submitted);
  }

  /** Takes the next queued item for a submit; returns its index and which attempt this is. */
  startSubmit(): { index: number; attempt: number } {
    const index = this.state.phase.indexOf(Phase.queued);
    const attempt = (this.state.attempts[index] = (this.state.attempts[index] ?? 0) + 1);
    this.#move(index, Phase.submitting);
    return { index, attempt };
  }

  /** The API took the item: task `taskId`, accepted at `nowMs`, at the cost it announced (BFL's), if any. */
  submitted(index: number, taskId: string, nowMs: number, creditsCost?: number): void {
    if (creditsCost !== undefined) this.state.credits[index] = creditsCost;
    const id = taskIdOf(taskId);
    this.state.taskIds[index] = taskId;
    this.#latestTaskId = taskId;
    this.#submittedAt[index] = nowMs;
    this.#indexByTask.set(id, index);
    this.#processing.delete(index); // a resubmitted item starts over
    this.#waiting.delete(index);
    this.#move(index, Phase.submitted);
    const webhookFirst = this.#early.get(id);
    if (webhookFirst) {
      this.#early.delete(id);
      this.taskFinished(webhookFirst);
    }
  }

  /** Back in the queue as if this attempt had not been made: the API did not take it. */
  requeueUntried(index: number): void {
    this.#move(index, Phase.queued);
    this.state.attempts[index] = (this.state.attempts[index] ?? 1) - 1;
  }

  /** Ends the item (anything but completed) and records its outcome. */
  finish(index: number, status: Exclude<ItemStatus, 'completed'>, error: ErrorSummary | null): void {
    this.#move(index, FINAL_PHASE[status]);
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

  // ----- tracking -----

  /**
   * A webhook said the task (named by the provider's id) finished. Duplicates and tasks of an
   * earlier attempt change nothing. Its result is kept when the webhook carried one; otherwise the
   * collect lane fetches it.
   */
  taskFinished(task: TaskFinishedSignal): void {
    const index = this.#indexByTask.get(task.taskId);
    if (index === undefined) {
      if (this.#early.size < MAX_EARLY_WEBHOOKS) this.#early.set(task.taskId, task);
      return;
    }
    if (this.state.phase[index] !== Phase.submitted || taskIdOf(this.taskIdOf(index)) !== task.taskId) return;
    if (task.urls?.length || task.status === 'failed') this.#known.set(index, task);
    this.#readyToCollect(index);
  }

  /** The items at the API and their task ids, for a batch lookup. */
  submittedTasks(): { indices: number[]; taskIds: string[] } {
    const indices: number[] = [];
    const taskIds: string[] = [];
    this.state.phase.forEach((phase, index) => {
      if (phase !== Phase.submitted) return;
      indices.push(index);
      taskIds.push(this.state.taskIds[index] ?? '');
    });
    return { indices, taskIds };
  }

  /** When each task the API has and that is not known finished was submitted (workflow time, ms). */
  submittedTimes(): number[] {
    const times: number[] = [];
    this.state.phase.forEach((phase, index) => {
      const submittedAt = this.#submittedAt[index];
      if (phase === Phase.submitted && submittedAt != null) times.push(submittedAt);
    });
    return times;
  }

  /**
   * A lookup's statuses for `indices` (and, where the answer carried them, finished tasks'
   * results): finished tasks go to the collect lane, lost ones end. Returns how many finished and
   * the statuses pixelmill does not know.
   */
  lookedUp(
    indices: readonly number[],
    statuses: readonly string[],
    results?: readonly (TaskResult | null)[],
  ): { finished: number; finishedSubmittedAt: number[]; unknown: { taskId: string; status: string }[] } {
    let finished = 0;
    const finishedSubmittedAt: number[] = [];
    const unknown: { taskId: string; status: string }[] = [];
    statuses.forEach((status, k) => {
      const index = indices[k] ?? -1;
      if (this.state.phase[index] !== Phase.submitted) return; // a webhook got there first
      if (status === 'completed' || status === 'failed') {
        finished++;
        const submittedAt = this.#submittedAt[index];
        if (submittedAt != null) finishedSubmittedAt.push(submittedAt);
        const result = results?.[k];
        if (result) this.#known.set(index, result);
        this.#readyToCollect(index);
        return;
      }
      const lost = lostTaskError(status);
      if (lost) {
        finished++;
        this.#lost(index, lost);
      } else if (status === 'processing') {
        this.#processing.add(index);
        this.#waiting.delete(index);
      } else if (status === 'pending') {
        this.#waiting.add(index);
      } else if (!NOT_FINISHED.has(status)) {
        unknown.push({ taskId: this.taskIdOf(index), status });
      }
    });
    return { finished, finishedSubmittedAt, unknown };
  }

  /**
   * Tasks unfinished past limits.task_timeout at `nowMs`. A lookup's word is not enough to
   * abandon a task (and pay for it again): one garbled answer reads as a status pixelmill does
   * not know. So each goes to the collect lane, whose GET either finds it finished or confirms
   * it is not (then settle() gives it up).
   */
  overdue(nowMs: number): void {
    const timeoutMs = this.limits.taskTimeoutMs;
    if (timeoutMs === undefined) return;
    for (const index of overdueItems(this.state.phase, this.#submittedAt, nowMs, timeoutMs)) {
      this.#processing.delete(index);
      this.#confirming.add(index);
      this.#readyToCollect(index);
    }
  }

  // ----- collecting -----

  /** Up to `size` items whose task is finished, for the collect lane. */
  takeToCollect(size: number): number[] {
    return this.#toCollect.splice(0, size);
  }

  hasToCollect(): boolean {
    return this.#toCollect.length > 0;
  }

  /** What a webhook already told about the item's task: no GET needed. */
  knownResult(index: number): TaskResult | undefined {
    return this.#known.get(index);
  }

  /** The item's index in the plan. */
  planIndexOf(index: number): number {
    return this.at.plan(index);
  }

  taskIdOf(index: number): string {
    return this.state.taskIds[index] ?? '';
  }

  /** The task the API accepted last in this execution, else any the shard has (after continue-as-new). */
  latestTaskId(): string | undefined {
    if (this.#latestTaskId !== undefined) return this.#latestTaskId;
    for (let index = this.state.taskIds.length - 1; index >= 0; index--) {
      const taskId = this.state.taskIds[index];
      if (taskId) return taskId;
    }
    return undefined;
  }

  /** What collectResults needs of an item to collect: its task, and its result if a webhook told it. */
  collectRequest(index: number): CollectRequest {
    const known = this.#known.get(index);
    return { ...this.#task(index), ...(known ? { known } : {}) };
  }

  /** The item's task: its plan index, task id and submissions. */
  #task(index: number): Pick<StoreRequest, 'index' | 'taskId' | 'attempts'> & { creditsCost?: number } {
    const announced = this.state.credits[index];
    return {
      index: this.at.plan(index),
      taskId: this.taskIdOf(index),
      attempts: this.state.attempts[index] ?? 1,
      // What the provider said at submit the task costs (BFL), for its outcome line.
      ...(announced ? { creditsCost: announced } : {}),
    };
  }

  /**
   * What collectResults did with an item: settled by its result and, when it completed, by what
   * was stored. Returns the item's local index when it is not settled (no result: its GET did not
   * go through; or a result to store that was not stored), for the workflow to fetch it apart.
   */
  collected(item: CollectedItem): number | undefined {
    const index = this.at.local(item.index);
    if (!item.result) return index;
    const request = this.settle(index, item.result);
    if (!request) return undefined;
    if (!item.stored) return index;
    this.stored([item.stored]);
    return undefined;
  }

  /**
   * The item's task as a GET or webhook told it. Returns what to store when it completed with
   * images; otherwise the item is resubmitted, ended, given up, or polled again.
   */
  settle(index: number, result: TaskResult): StoreRequest | undefined {
    this.#known.delete(index);
    const overdue = this.#confirming.delete(index);
    // A task still running shows its reservation, which is not a charge yet.
    if (result.status === 'completed' || result.status === 'failed')
      this.state.credits[index] = result.creditsCost ?? this.state.credits[index] ?? 0;
    const lost = lostTaskError(result.status);
    const request = storeRequestOf(this.#task(index), result);
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
      if (this.#resubmits(index, result.error)) this.#requeue(index);
      else this.finish(index, 'failed', result.error ?? FAILED_WITHOUT_ERROR);
    } else if (lost) {
      this.#lost(index, lost);
    } else if (overdue) {
      this.#giveUp(index); // the GET confirms it: still unfinished past limits.task_timeout
    } else {
      this.#move(index, Phase.submitted); // not terminal after all (or no URLs yet): keep polling
    }
    return undefined;
  }

  /** What the store activity did with the items sent to it. */
  stored(items: StoreResultsOutput['items']): void {
    for (const item of items) {
      const index = this.at.local(item.index);
      if (item.status === 'completed') {
        this.#move(index, Phase.completed);
        this.state.images += item.images;
      } else if (item.status === 'expired' && this.#resubmits(index, item.error)) {
        // Deleted by the provider before it was stored (its retention): generated again, as the
        // retry policy says. The lost task was charged all the same.
        this.#resubmitLost(index);
      } else if (item.error?.type === FailureType.ImageCheckFailed && this.#resubmits(index, item.error)) {
        // Its images failed a check the retry policy names: generated again. The rejected task
        // was charged all the same.
        this.state.checkRejected = (this.state.checkRejected ?? 0) + 1;
        this.state.checkRejectedCredits =
          (this.state.checkRejectedCredits ?? 0) + (this.state.credits[index] ?? 0);
        this.state.credits[index] = 0;
        this.#requeue(index);
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

  #move(index: number, phase: PhaseValue): void {
    const from = this.state.phase[index]!;
    this.#byPhase[from]!--;
    this.#byPhase[phase]!++;
    this.state.phase[index] = phase;
  }

  #readyToCollect(index: number): void {
    this.#move(index, Phase.storing);
    this.#toCollect.push(index);
  }

  #requeue(index: number): void {
    this.#move(index, Phase.queued);
    this.state.taskIds[index] = null;
    this.#submittedAt[index] = null;
  }

  #resubmits(index: number, error: ErrorSummary | undefined): boolean {
    return shouldResubmit(error, this.state.attempts[index] ?? 1, this.limits.retry);
  }

  /** A task the provider no longer has (expired, not found): resubmitted if the retry policy says so. */
  #lost(index: number, error: ErrorSummary): void {
    if (this.#resubmits(index, error)) this.#resubmitLost(index);
    else this.finish(index, error.code === 'task_expired' ? 'expired' : 'failed', error);
  }

  /** Requeues an item whose task's result is gone, keeping what that task cost in the totals. */
  #resubmitLost(index: number): void {
    this.state.lostCredits = (this.state.lostCredits ?? 0) + (this.state.credits[index] ?? 0);
    this.state.credits[index] = 0;
    this.#requeue(index);
  }

  /** Gives up an overdue task: resubmitted if the retry policy says so, else failed. */
  #giveUp(index: number): void {
    const ref = this.state.taskIds[index];
    const error = taskTimedOut(ref ? taskIdOf(ref) : null, this.limits.taskTimeoutMs ?? 0);
    this.state.givenUp = (this.state.givenUp ?? 0) + 1;
    if (this.#resubmits(index, error)) this.#requeue(index);
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
