// What the CLI and the workers read about a task queue from the server: who polls it.

/** temporal.api.enums.v1.TaskQueueType (@temporalio/proto is not a direct dependency). */
export const TASK_QUEUE_TYPE_WORKFLOW = 1;
export const TASK_QUEUE_TYPE_ACTIVITY = 2;

/**
 * A live worker polls again within about a minute (the server's long-poll expiry), while the
 * server lists a worker that stopped for 5 minutes: an older poll is not a worker.
 */
export const POLLER_FRESH_MS = 90_000;

type ProtoTimestamp = { seconds?: unknown; nanos?: number | null } | null | undefined;

/** A protobuf timestamp in epoch ms; undefined when absent. */
export function timestampMs(time: ProtoTimestamp): number | undefined {
  if (!time?.seconds) return undefined;
  return Number(time.seconds) * 1000 + Math.floor((time.nanos ?? 0) / 1e6);
}

interface TaskQueueDescriber {
  describeTaskQueue(request: {
    namespace: string;
    taskQueue: { name: string };
    taskQueueType: number;
  }): Promise<{ pollers: { identity?: string | null; lastAccessTime?: ProtoTimestamp }[] }>;
}

/** The worker processes (distinct identities) that polled `taskQueue` within POLLER_FRESH_MS. */
export async function workersPolling(
  service: TaskQueueDescriber,
  namespace: string,
  taskQueue: string,
  taskQueueType: number,
  nowMs = Date.now(),
): Promise<number> {
  const { pollers } = await service.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue },
    taskQueueType,
  });
  const fresh = pollers.filter(
    (poller) => (timestampMs(poller.lastAccessTime) ?? 0) >= nowMs - POLLER_FRESH_MS,
  );
  return new Set(fresh.map((poller) => poller.identity)).size;
}
