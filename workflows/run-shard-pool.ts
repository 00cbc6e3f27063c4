// The shards a run has running: their handles, their shares of `max_in_flight`
// (in-flight-shares.ts), the signals sent to them, and what to do when one closes. Shards outlive
// the run's executions (ParentClosePolicy.ABANDON), so the pool is carried over continue-as-new as
// plain data and reaches the shards of earlier executions by their workflow ids.
import {
  ApplicationFailure,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  startChild,
  type ChildWorkflowHandle,
  type ExternalWorkflowHandle,
} from '@temporalio/workflow';
import type { cancelSignal, pauseSignal, resumeSignal } from '../common/names.js';
import { inFlightShareSignal } from '../common/names.js';
import type { RunCarriedState, ShardInput, ShardResult } from '../common/types.js';
import { InFlightShares } from './in-flight-shares.js';
import { batchShardWorkflow } from './batch-shard.js';
import { shardWorkflow } from './shard.js';

type ShardSignalTarget = Pick<ExternalWorkflowHandle, 'signal'>;

/** A started shard: its handle if this execution started it, and the budget it was given. */
interface RunningShard {
  index: number;
  allowance: number | undefined;
  child?: ChildWorkflowHandle<typeof shardWorkflow>;
}

export class ShardPool {
  readonly running: Map<string, RunningShard>;
  #shares: InFlightShares | undefined;
  /** Called when a shard closes with a result (not a failure). */
  onClosed: (index: number, result: ShardResult, allowance: number | undefined) => void = () => undefined;
  /** Signals to shards not yet recorded: continue-as-new waits for them. */
  signalsInFlight = 0;
  /** A shard's failure, which fails the run. */
  failure: Error | undefined;

  /**
   * The shards an earlier execution handed on are known at once, before the run's plan: signals
   * (a cancel) may be waiting for them in the execution's first activation.
   */
  constructor(private readonly carried: Pick<RunCarriedState, 'running' | 'shares'> | undefined) {
    this.running = new Map(
      (carried?.running ?? []).map(({ workflowId, index, allowance }) => [workflowId, { index, allowance }]),
    );
  }

  /** The run's `max_in_flight` and a starting shard's share of it, once the plan is known. */
  limit(maxInFlight: number, perShardInFlight: number): void {
    this.#shares = new InFlightShares(maxInFlight, perShardInFlight, this.carried?.shares);
  }

  get shares(): InFlightShares {
    if (!this.#shares) throw new Error('the shard pool has no limits yet');
    return this.#shares;
  }

  /** A signal to a running shard; one that closes before it lands needs it no more. */
  signal(workflowId: string, send: (shard: ShardSignalTarget) => Promise<void>): void {
    const shard = this.running.get(workflowId);
    if (!shard) return;
    this.signalsInFlight++;
    void send(shard.child ?? getExternalWorkflowHandle(workflowId))
      .catch(() => undefined)
      .finally(() => void this.signalsInFlight--);
  }

  /** Pause, resume or cancel, to every running shard. */
  forward(signal: typeof pauseSignal | typeof resumeSignal | typeof cancelSignal): void {
    for (const workflowId of this.running.keys()) this.signal(workflowId, (shard) => shard.signal(signal));
  }

  /** Raises the shares of submitting shards out of what is free (in-flight-shares.ts). */
  raise(allStarted: boolean): void {
    const reachable = (workflowId: string): boolean => this.running.has(workflowId);
    for (const [workflowId, share] of this.shares.raise(allStarted, reachable))
      this.signal(workflowId, (shard) => shard.signal(inFlightShareSignal, share));
  }

  canStart(parallel: number): boolean {
    return this.shares.submitting < parallel && this.shares.free() > 0;
  }

  /** Starts a shard with its share (`args(share)` builds its input) and follows it to its end. */
  async start(
    workflowId: string,
    index: number,
    allowance: number | undefined,
    options: {
      taskQueue: string;
      args: (maxInFlight: number) => ShardInput;
      presentation: (args: ShardInput) => object;
    },
  ): Promise<void> {
    const args = options.args(this.shares.start(workflowId));
    // A provider that takes batch files or held calls (its submission capability) has its own shard.
    const child = await startChild(args.limits.submission ? batchShardWorkflow : shardWorkflow, {
      workflowId,
      taskQueue: options.taskQueue,
      // A shard outlives the execution that started it when the run continues as new.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      ...options.presentation(args),
      args: [args],
    });
    this.running.set(workflowId, { index, allowance, child });
    void child
      .result()
      .then((result) => this.closed(workflowId, result))
      .catch((error: Error) => void (this.failure ??= error));
  }

  /** A shard's result, by its signal or its child's completion, whichever comes first. */
  closed(workflowId: string, result: ShardResult): void {
    const shard = this.running.get(workflowId);
    if (!shard) return;
    this.running.delete(workflowId);
    if (result.failure !== undefined) {
      this.failure ??= ApplicationFailure.nonRetryable(result.failure, 'ShardFailed');
      return;
    }
    this.shares.close(workflowId);
    this.onClosed(shard.index, result, shard.allowance);
  }

  /**
   * Asks every running shard to cancel: a run that ends in failure or is cancelled from outside
   * leaves none behind, though they outlive it and an earlier execution may have started them.
   */
  async cancelAll(): Promise<void> {
    const cancel = (workflowId: string) =>
      getExternalWorkflowHandle(workflowId)
        .cancel()
        .catch(() => undefined);
    await Promise.all([...this.running.keys()].map(cancel));
  }

  /** What continue-as-new carries of the pool. */
  state(): Pick<RunCarriedState, 'running' | 'shares'> {
    return {
      running: [...this.running].map(([workflowId, { index, allowance }]) => ({
        workflowId,
        index,
        ...(allowance !== undefined ? { allowance } : {}),
      })),
      shares: this.shares.state(),
    };
  }
}
