// From a webhook body to the shard's `taskFinished` signal: the Task (spec 2.3) reduced to what a
// shard collects (status, result URLs, credits, error), sent through Temporal's client. Only the
// task's own fields go into the signal, so nothing about the delivery (signature, secret) reaches
// workflow history.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { isTerminalStatus, type Task } from '../api/schemas.js';
import { taskError } from '../api/task-error.js';
import { taskFinishedSignal } from '../common/names.js';
import type { TaskFinishedSignal } from '../common/types.js';

/** `signalled`, or `workflow_gone` when no open workflow has that id (finished, or never existed). */
export type SignalOutcome = 'signalled' | 'workflow_gone';
export type ShardSignaller = (workflowId: string, task: TaskFinishedSignal) => Promise<SignalOutcome>;

/** The signal for a terminal task, or undefined for a state the spec never pushes. */
export function taskFinishedFrom(task: Task): TaskFinishedSignal | undefined {
  if (!isTerminalStatus(task.status)) return undefined;
  const signal: TaskFinishedSignal = { taskId: task.id, status: task.status };
  if (task.result?.url.length) signal.urls = task.result.url;
  if (task.result?.expires_at !== undefined) signal.expiresAt = task.result.expires_at * 1000;
  if (task.credits_cost !== undefined) signal.creditsCost = task.credits_cost;
  if (task.error !== undefined) signal.error = taskError(task.error);
  return signal;
}

/**
 * Signals through `client`. A handle without a run id targets the latest run of the id, so a shard
 * that continued as new still gets the signal; any error other than "not found" is thrown, for the
 * receiver to answer 503 and the service to retry.
 */
export function temporalSignaller(client: Client): ShardSignaller {
  return async (workflowId, task) => {
    try {
      await client.workflow.getHandle(workflowId).signal(taskFinishedSignal, task);
      return 'signalled';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return 'workflow_gone';
      throw error;
    }
  };
}
