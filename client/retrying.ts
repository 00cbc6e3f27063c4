// What a run's activities are retrying right now, read from Temporal's pending activities: an API
// that cannot be reached, a store that refuses writes. Temporal retries such failures patiently,
// so the run's counts do not move and would hide them; the display and `status` show this instead.
import type { Client } from '@temporalio/client';
import { FailureType } from '../common/failure-types.js';
import { timestampMs } from '../temporal/task-queues.js';

export interface Retrying {
  /** The activity type, e.g. `submitItem`. */
  activity: string;
  /** The last failure's message, one line. */
  message: string;
  /** The attempt now scheduled or running (2 after the first failure). */
  attempt: number;
  /** Seconds until that attempt, when it is waiting for its retry interval. */
  nextInS?: number;
}

/** Retries that are the service working as designed, not trouble: the rate limit, a lagging GET. */
const ROUTINE = new Set<string>([FailureType.RateLimitError, FailureType.TaskNotFinished]);

/** The most retried failing activity of these workflows, or undefined when none is failing. */
export async function retryingNow(client: Client, workflowIds: readonly string[], nowMs = Date.now()) {
  const descriptions = await Promise.all(
    workflowIds.map((id) =>
      client.workflow
        .getHandle(id)
        .describe()
        .catch(() => undefined),
    ),
  );
  let worst: Retrying | undefined;
  for (const description of descriptions) {
    for (const pending of description?.raw.pendingActivities ?? []) {
      const failure = pending.lastFailure;
      const attempt = pending.attempt ?? 1;
      if (!failure || attempt < 2 || ROUTINE.has(failure.applicationFailureInfo?.type ?? '')) continue;
      if (worst && worst.attempt >= attempt) continue;
      const next = timestampMs(pending.nextAttemptScheduleTime);
      worst = {
        activity: pending.activityType?.name ?? 'activity',
        message: (failure.message ?? '').split('\n')[0] ?? '',
        attempt,
        ...(next !== undefined && next > nowMs ? { nextInS: Math.ceil((next - nowMs) / 1000) } : {}),
      };
    }
  }
  return worst;
}

/** `retrying: <message> (submitItem, attempt 8, next in 32 s)`. */
export function describeRetrying(retrying: Retrying): string {
  const next = retrying.nextInS !== undefined ? `, next in ${retrying.nextInS} s` : '';
  return `retrying: ${retrying.message} (${retrying.activity}, attempt ${retrying.attempt}${next})`;
}
