// How many worker processes share this worker's API task queue, as the Temporal server sees them: the
// distinct identities that polled it recently. The pacer divides the run's rate by this number.
// A worker that died keeps counting until its last poll ages out, which only slows the others
// for a while: the error always falls on the side of fewer calls.
import { TASK_QUEUE_TYPE_ACTIVITY, workersPolling } from '../temporal/task-queues.js';
import { activityContext } from './context.js';
const REFRESH_MS = 10_000;

export class ApiWorkerFleet {
  #size = 1;
  #checkedAt = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;
  /** The first count, which the worker's first calls wait for. */
  #first: Promise<void> | undefined;

  constructor(
    /** The API task queue whose pollers are counted. */
    private readonly queue: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The current estimate (at least 1); refreshed from the server at most every 10 s. */
  async size(): Promise<number> {
    if (this.#refreshing === undefined && this.now() - this.#checkedAt >= REFRESH_MS) {
      this.#refreshing = this.#refresh().finally(() => void (this.#refreshing = undefined));
      this.#first ??= this.#refreshing;
    }
    // The first calls of a worker wait for the first count: they must not go out at the whole
    // run's rate before it is in. Later refreshes run behind the cached estimate, so a slow
    // server does not stall every call of the worker. (#refresh never rejects.)
    await this.#first;
    return this.#size;
  }

  async #refresh(): Promise<void> {
    this.#checkedAt = this.now();
    const context = activityContext();
    if (!context) return; // outside an activity (unit tests): keep the estimate
    try {
      const { client, info } = context;
      const polling = await workersPolling(
        client.workflowService,
        info.workflowNamespace ?? client.options.namespace,
        this.queue,
        TASK_QUEUE_TYPE_ACTIVITY,
        this.now(),
      );
      this.#size = Math.max(1, polling);
    } catch (error) {
      // Keep the last estimate; the server's own dispatch limit still holds meanwhile.
      context.log.warn(`cannot count the workers of ${this.queue}: ${String(error)}`);
    }
  }
}
