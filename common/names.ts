// Names shared by workflows, activities, the worker and the CLI: task queues, workflow ids,
// signals and queries. Defined once here so that no string is spelled twice.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { MAX_BATCH_IDS } from './batch-lookup.js';
import type { GovernorGrant, GovernorReport, GovernorView } from '../governor/types.js';
import type {
  PauseRequest,
  RunProgress,
  ShardHandoff,
  ShardProgress,
  ShardResult,
  TaskFinishedSignal,
} from './types.js';

/**
 * The three task queues of one API account (common/api-account.ts). Only workers that hold that
 * account's key poll them, so no run is ever served with another account's API or key.
 */
export interface TaskQueues {
  /** Workflow tasks, and activities that are neither API calls nor transfers. */
  workflow: string;
  /**
   * Every call to the image API runs as one activity on this queue, whose dispatch rate Temporal's
   * matching service limits for all workers together: the run's `requests_per_second`.
   */
  api: string;
  /** Submits of runs whose rate is discovered (`auto`): the governor sets this queue's dispatch rate. */
  submit: string;
  /** Batch lookups and task GETs of runs whose rate is discovered, likewise. */
  query: string;
  /** Downloads from the result host and writes to storage: not API calls, not rate limited. */
  transfer: string;
}

/** Where runs recorded before API accounts (no `apiAccount` in their input) replay their activities. */
const SHARED_TASK_QUEUES: TaskQueues = {
  workflow: 'pixelmill',
  api: 'pixelmill-api',
  submit: 'pixelmill-submit',
  query: 'pixelmill-query',
  transfer: 'pixelmill-transfer',
};

/** `pixelmill@<account>`, `pixelmill-api@<account>`, `pixelmill-submit@<account>` and so on. */
export function taskQueuesOf(apiAccount: string | undefined): TaskQueues {
  if (apiAccount === undefined) return SHARED_TASK_QUEUES;
  const at = (queue: string): string => `${queue}@${apiAccount}`;
  return {
    workflow: at(SHARED_TASK_QUEUES.workflow),
    api: at(SHARED_TASK_QUEUES.api),
    submit: at(SHARED_TASK_QUEUES.submit),
    query: at(SHARED_TASK_QUEUES.query),
    transfer: at(SHARED_TASK_QUEUES.transfer),
  };
}

/** The account a task queue belongs to (the part after `@`); undefined for the shared queues. */
export function accountOfQueue(taskQueue: string): string | undefined {
  const at = taskQueue.lastIndexOf('@');
  return at < 0 ? undefined : taskQueue.slice(at + 1);
}

/** The rate governor of one API account (workflows/governor.ts): `pixelmill-governor/<account>`. */
export function governorWorkflowId(apiAccount: string | undefined): string {
  return `pixelmill-governor/${apiAccount ?? 'shared'}`;
}

/** Items per shard: the batch lookup's maximum, so one call tracks a whole shard. */
export const SHARD_SIZE = MAX_BATCH_IDS;

export const RUN_WORKFLOW_PREFIX = 'pixelmill/';

/** `pixelmill/<manifest name>`: running the same manifest again finds this run. */
export function runWorkflowId(manifestName: string): string {
  return `${RUN_WORKFLOW_PREFIX}${manifestName}`;
}

export function shardWorkflowId(runId: string, shardIndex: number): string {
  return `${runId}/shard-${String(shardIndex + 1).padStart(4, '0')}`;
}

/** The run a shard belongs to, from the shard's workflow id; other ids come back as they are. */
export function runIdOfShard(workflowId: string): string {
  return workflowId.replace(/\/shard-\d+$/, '');
}

/** Pause submitting; in-flight tasks are still collected. A shard that gets a 402 sends it to its run. */
export const pauseSignal = defineSignal<[PauseRequest?]>('pause');
export const resumeSignal = defineSignal('resume');
/** Submit nothing new; collect what is in flight; report the rest as cancelled. */
export const cancelSignal = defineSignal('cancel');
/**
 * Run to shard: your share of `max_in_flight` is now this many items (only ever raised: sent
 * as earlier shards close and free the slots they held).
 */
export const inFlightShareSignal = defineSignal<[number]>('inFlightShare');
/** Shard to run: every item has been submitted; the run may start the next shard (in-flight-shares.ts). */
export const shardSubmittedSignal = defineSignal<[ShardHandoff]>('shardSubmitted');
/**
 * Shard to run: its progress, each time its final items cross a multiple of
 * `limits.progressStep`, so that the run's details in the Temporal UI count running shards too.
 */
export const shardProgressSignal = defineSignal<[ShardProgress]>('shardProgress');
/**
 * Shard to run: its result, just before it completes. A run that continued
 * as new learns its earlier executions' shards' results only this way.
 */
export const shardFinishedSignal = defineSignal<[ShardResult]>('shardFinished');
/** A task's terminal state learned from a webhook, routed to the shard that owns it. */
export const taskFinishedSignal = defineSignal<[TaskFinishedSignal]>('taskFinished');

export const runProgressQuery = defineQuery<RunProgress>('progress');
export const shardProgressQuery = defineQuery<ShardProgress>('shardProgress');

/** Worker to governor: what its calls got since its last report; answered with the rates in force. */
export const reportOutcomesUpdate = defineUpdate<GovernorGrant, [GovernorReport]>('reportOutcomes');
export const governorViewQuery = defineQuery<GovernorView>('rates');
