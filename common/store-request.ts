// What to store of a finished task: one rule for the shard workflow (ShardItems.settle) and the
// collect activity, which stores what it finds without asking the workflow first.
import type { StoreRequest, TaskResult } from './types.js';

/** The store request of a task that completed with images; undefined for any other result. */
export function storeRequestOf(
  /** `creditsCost`: what the provider announced at submit, when its result says nothing of it. */
  task: Pick<StoreRequest, 'index' | 'taskId' | 'attempts'> & { creditsCost?: number },
  result: TaskResult,
): StoreRequest | undefined {
  if (result.status !== 'completed' || !result.urls?.length) return undefined;
  return {
    index: task.index,
    taskId: task.taskId,
    urls: result.urls,
    ...(result.expiresAt !== undefined ? { expiresAt: result.expiresAt } : {}),
    attempts: task.attempts,
    creditsCost: result.creditsCost ?? task.creditsCost ?? 0,
  };
}
