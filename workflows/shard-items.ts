// The items of one shard from queued to final: pure bookkeeping, with no Temporal calls and no
// clock of its own, so it is unit-tested without a server (test/shard-items.test.ts). The shard
// workflow (shard.ts) runs the lanes and the activities and tells this class what each answer was:
// submits, lookups, webhooks, collects. The phases, their counts and the rules that end an item or
// queue it again are ItemPhases' (item-phases.ts); counts are kept as items move, so the lanes'
// conditions cost nothing however often they are evaluated.
import type {
  CollectedItem,
  CollectRequest,
  ItemCounts,
  ShardCarriedState,
  ShardLimits,
  StoreRequest,
  TaskFinishedSignal,
  TaskResult,
} from '../common/types.js';
import { taskIdOf } from '../common/task-ref.js';
import { ItemPhases, type ShardIndices } from './item-phases.js';
import { countItems, lostTaskError, overdueItems, Phase } from './tracking.js';

/**
 * Lookup answers that mean "not finished yet" without a word worth logging: pending, a task whose
 * own call failed in a lookup of several (activities/task-lookups.ts), and a BFL task its global
 * host does not find (another region may hold it: providers/bfl/client.ts).
 */
const NOT_FINISHED = new Set(['pending', 'unanswered', 'unlocated']);

/** Webhooks kept for tasks whose submit has not returned yet (fast tasks outrun the activity result). */
export const MAX_EARLY_WEBHOOKS = 1_000;

export class ShardItems extends ItemPhases {
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
  /** The task the API accepted last in this execution. */
  #latestTaskId: string | undefined;

  /** Told of each task a push (webhook, status stream) finished: when it was submitted, and told. */
  onPushedFinish?: (submittedAtMs: number, nowMs: number) => void;

  constructor(state: ShardCarriedState, at: ShardIndices, limits: ShardLimits) {
    super(state, at, limits);
    state.phase.forEach((phase, index) => {
      const taskId = state.taskIds[index];
      if (taskId) this.#indexByTask.set(taskIdOf(taskId), index);
      if (phase === Phase.storing) this.#toCollect.push(index);
    });
  }

  // ----- counts -----

  counts(): ItemCounts {
    return countItems(this.state.phase, this.#processing);
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
    this.move(index, Phase.submitting);
    return { index, attempt };
  }

  /** The API took the item: task `taskId`, accepted at `nowMs`, at the cost it announced (BFL's), if any. */
  submitted(index: number, taskId: string, nowMs: number, creditsCost?: number): void {
    if (creditsCost !== undefined) this.state.credits[index] = creditsCost;
    const id = taskIdOf(taskId);
    this.state.taskIds[index] = taskId;
    this.#latestTaskId = taskId;
    this.submittedAt[index] = nowMs;
    this.#indexByTask.set(id, index);
    this.#processing.delete(index); // a resubmitted item starts over
    this.#waiting.delete(index);
    this.move(index, Phase.submitted);
    const webhookFirst = this.#early.get(id);
    if (webhookFirst) {
      this.#early.delete(id);
      this.taskFinished(webhookFirst, nowMs);
    }
  }

  // ----- tracking -----

  /**
   * A webhook said the task (named by the provider's id) finished. Duplicates and tasks of an
   * earlier attempt change nothing. Its result is kept when the webhook carried one; otherwise the
   * collect lane fetches it. `nowMs`: when it was told, for `onPushedFinish`.
   */
  taskFinished(task: TaskFinishedSignal, nowMs?: number): void {
    const index = this.#indexByTask.get(task.taskId);
    if (index === undefined) {
      if (this.#early.size < MAX_EARLY_WEBHOOKS) this.#early.set(task.taskId, task);
      return;
    }
    if (this.state.phase[index] !== Phase.submitted || taskIdOf(this.taskIdOf(index)) !== task.taskId) return;
    if (task.urls?.length || task.status === 'failed') this.#known.set(index, task);
    const submittedAt = this.submittedAt[index];
    if (submittedAt != null && nowMs !== undefined) this.onPushedFinish?.(submittedAt, nowMs);
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
      const submittedAt = this.submittedAt[index];
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
        const submittedAt = this.submittedAt[index];
        if (submittedAt != null) finishedSubmittedAt.push(submittedAt);
        const result = results?.[k];
        if (result) this.#known.set(index, result);
        this.#readyToCollect(index);
        return;
      }
      const lost = lostTaskError(status);
      if (lost) {
        finished++;
        this.lost(index, lost);
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
    for (const index of overdueItems(this.state.phase, this.submittedAt, nowMs, timeoutMs)) {
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
    return { ...this.task(index), ...(known ? { known } : {}) };
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
   * The item's task as a GET or webhook told it (ItemPhases.settleAs). Returns what to store when
   * it completed with images.
   */
  settle(index: number, result: TaskResult): StoreRequest | undefined {
    this.#known.delete(index);
    return this.settleAs(index, result, this.#confirming.delete(index));
  }

  // ----- internals -----

  #readyToCollect(index: number): void {
    this.move(index, Phase.storing);
    this.#toCollect.push(index);
  }
}
