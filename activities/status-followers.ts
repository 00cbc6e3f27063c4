// Status streams a worker follows for the tasks it submitted, for a provider whose capabilities
// say `statusStream` and a run without webhooks: each stream's end is signalled to the task's
// shard as a webhook's delivery is (webhook/signal.ts), so the shard learns that a task finished,
// and frees its slot, the moment the provider tells it rather than at its next timed lookup.
// Like a webhook, a stream is a fast path and nothing more: one that breaks, a signal that fails
// or a worker that dies leaves the task to the shard's lookups, which catch what a push missed
// (no retry layer here: Temporal's activities own retries).
import { activityContext } from './context.js';
import { taskIdOf } from '../common/task-ref.js';
import { temporalSignaller, type ShardSignaller } from '../webhook/signal.js';
import type { ProviderClient, TaskState } from '../providers/types.js';

/** Streams a worker holds open at most (a connection each, well within a process's 1,024 files); tasks beyond are left to lookups. */
export const MAX_FOLLOWED = 500;

export interface Followed {
  client: ProviderClient;
  /** The task's reference, as submit returned it. */
  ref: string;
  /** The shard to tell: the latest run of this workflow id (a shard continues as new). */
  workflowId: string;
  signal: ShardSignaller;
  /** How long the stream may stay open: past it the task is the shard's to give up. */
  maxMs: number;
}

/** A followed task: the first state its stream told (at once), undefined if it broke before. */
export interface Following {
  first: Promise<TaskState | undefined>;
}

export class StatusFollowers {
  readonly #stop = new AbortController();
  #open = 0;

  constructor(private readonly maxFollowed = MAX_FOLLOWED) {}

  get open(): number {
    return this.#open;
  }

  /**
   * Follows the task `ref` for the shard whose activity is running (its workflow id, the worker's
   * Temporal client); undefined when there is none or too many streams are open already.
   */
  followForShard(client: ProviderClient, ref: string, maxMs: number): Following | undefined {
    const context = activityContext();
    if (!context || !client.followStatus) return undefined;
    let temporal;
    try {
      temporal = context.client;
    } catch {
      return undefined;
    }
    const workflowId = context.info.workflowExecution?.workflowId;
    if (workflowId === undefined) return undefined;
    return this.follow({ client, ref, workflowId, signal: temporalSignaller(temporal), maxMs });
  }

  follow(followed: Followed): Following | undefined {
    if (this.#open >= this.maxFollowed || this.#stop.signal.aborted || !followed.client.followStatus)
      return undefined;
    this.#open++;
    let told: (state: TaskState | undefined) => void = () => undefined;
    const first = new Promise<TaskState | undefined>((resolve) => (told = resolve));
    void this.#follow(followed, told).finally(() => {
      this.#open--;
      told(undefined);
    });
    return { first };
  }

  /** Ends every stream (the worker is shutting down); their tasks go to lookups. */
  close(): void {
    this.#stop.abort();
  }

  async #follow(
    { client, ref, workflowId, signal, maxMs }: Followed,
    told: (state: TaskState) => void,
  ): Promise<void> {
    let state: TaskState | undefined;
    try {
      state = await client.followStatus!(ref, {
        signal: AbortSignal.any([this.#stop.signal, AbortSignal.timeout(maxMs)]),
        onState: told,
      });
    } catch {
      // A broken stream: the shard's lookups find the task.
      if (this.#stop.signal.aborted) return;
    }
    const finished = state?.status === 'completed' || state?.status === 'failed';
    try {
      // The signal names the task as a webhook does: by the provider's id. A stream that told
      // nothing final still made its call, counted in the run's figures.
      await signal(workflowId, {
        taskId: taskIdOf(ref),
        status: state?.status ?? 'unknown',
        lookupCalls: 1,
        ...(finished ? {} : { callOnly: true }),
      });
    } catch {
      // A failed signal: the shard's lookups find the task.
    }
  }
}
