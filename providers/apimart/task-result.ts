// A task of the first API (spec 2.3) as pixelmill's TaskResult: one reading for the task GET and
// the webhook body, so both tell a shard the same thing.
import type { ErrorSummary, TaskResult } from '../../common/types.js';
import type { Task, TaskError } from './wire.js';

/** The task's error (spec 2.5) as the report's `{type, code, message}`, with stand-ins for missing fields. */
export function taskError(error: TaskError): ErrorSummary {
  return {
    type: error.type ?? 'unknown',
    code: error.code ?? 'unknown',
    message: error.message ?? 'the task failed without an error message',
  };
}

export function taskResultOf(task: Task): TaskResult {
  const result: TaskResult = { status: task.status };
  if (task.result !== undefined) {
    result.urls = task.result.url;
    // The API gives Unix seconds; workflows compare with their clock in milliseconds.
    if (task.result.expires_at !== undefined) result.expiresAt = task.result.expires_at * 1000;
  }
  if (task.credits_cost !== undefined) result.creditsCost = task.credits_cost;
  if (task.error !== undefined) result.error = taskError(task.error);
  return result;
}
