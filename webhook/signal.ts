// From a verified webhook to the shard's `taskFinished` signal: what the provider said reduced to
// what a shard collects (status, result URLs, credits, error), sent through Temporal's client. Only the
// task's own fields go into the signal, so nothing about the delivery (signature, secret) reaches
// workflow history.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { WebhookNotice } from '../providers/types.js';
import { taskFinishedSignal } from '../common/names.js';
import type { TaskFinishedSignal } from '../common/types.js';

/** `signalled`, or `workflow_gone` when no open workflow has that id (finished, or never existed). */
export type SignalOutcome = 'signalled' | 'workflow_gone';
export type ShardSignaller = (workflowId: string, task: TaskFinishedSignal) => Promise<SignalOutcome>;

const TERMINAL = new Set(['completed', 'failed']);

/**
 * The signal for a finished task, or undefined for a state that finishes nothing (a start event).
 * A finished task whose webhook did not carry its result is signalled without it: the shard
 * fetches it.
 */
export function taskFinishedFrom(notice: WebhookNotice): TaskFinishedSignal | undefined {
  if (!TERMINAL.has(notice.status)) return undefined;
  return { ...notice.result, taskId: notice.taskId, status: notice.status };
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
