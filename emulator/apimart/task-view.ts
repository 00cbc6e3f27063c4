// The Task object (spec 2.3) as GET /v1/tasks/{id} returns it and as the webhook body carries it,
// rendered from a task record at a given moment. Fields appear exactly where the spec says:
// completed/actual_time only in terminal states, result only when completed, and a failed task
// carries id, status and error (plus its times and a credits_cost of 0: it was refunded).
import type { Language, Task } from './wire.js';
import { taskError } from './errors.js';
import type { TaskRecord } from './store.js';
import { imageIdFor } from './task-id.js';

/** `{result_base_url}/{task_id}/{index}.png` */
export function resultUrlFor(resultBaseUrl: string, taskId: string, index: number): string {
  return `${resultBaseUrl}/${taskId}/${index}.png`;
}

const seconds = (ms: number): number => Math.floor(ms / 1000);

/**
 * The task as seen at `now`, which must not be past the record's expiry (callers answer 404 then).
 * `language` picks the error text of a failed task.
 */
export function renderTask(record: TaskRecord, now: number, language: Language, resultBaseUrl: string): Task {
  const created = seconds(record.submittedAt);
  // A lost job (faults.stuck_task_rate) stays processing, short of 100%, for ever.
  if (record.stuck || now < record.endsAt) {
    const processing = now >= record.startsAt;
    const span = record.endsAt - record.startsAt;
    // Linear within the generation time, but never 100% before the task is really done.
    const percent =
      processing && span > 0 ? Math.min(99, Math.floor(((now - record.startsAt) / span) * 100)) : 0;
    return {
      id: record.id,
      status: processing ? 'processing' : 'pending',
      progress: `${percent}%`,
      created,
      estimated_time: record.estimatedSeconds,
      credits_cost: record.reserved,
    };
  }
  const completed = seconds(record.endsAt);
  const actualTime = Math.max(1, Math.ceil((record.endsAt - record.submittedAt) / 1000));
  if (record.failure) {
    return {
      id: record.id,
      status: 'failed',
      error: taskError(record.failure, language),
      created,
      completed,
      actual_time: actualTime,
      credits_cost: 0,
    };
  }
  const url: string[] = [];
  const imageIds: string[] = [];
  for (let i = 0; i < record.n; i++) {
    url.push(resultUrlFor(resultBaseUrl, record.id, i));
    imageIds.push(imageIdFor(record.id, i));
  }
  return {
    id: record.id,
    status: 'completed',
    progress: '100%',
    created,
    estimated_time: record.estimatedSeconds,
    completed,
    actual_time: actualTime,
    credits_cost: record.reserved,
    result: { url, expires_at: seconds(record.expiresAt), image_ids: imageIds },
  };
}
