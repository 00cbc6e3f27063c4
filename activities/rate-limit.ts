// configureRateLimit: sets the run's requests_per_second as the server-side dispatch rate of
// the run's API task queue. Temporal's matching service then hands out API activities no faster than that,
// across every worker process together, which is what makes the limit global. Workers also set
// maxTaskQueueActivitiesPerSecond as a fallback for servers without task queue config.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { isGrpcServiceError } from '@temporalio/client';
import { taskQueuesOf } from '../common/names.js';
import type { ConfigureRateLimitInput } from '../common/types.js';
import { TASK_QUEUE_TYPE_ACTIVITY } from '../temporal/task-queues.js';

/** gRPC status UNIMPLEMENTED: the server predates UpdateTaskQueueConfig. */
const GRPC_UNIMPLEMENTED = 12;

function unsupported(error: unknown): boolean {
  if (!isGrpcServiceError(error)) return false;
  return error.code === GRPC_UNIMPLEMENTED || /not (supported|enabled)|disabled/i.test(error.details ?? '');
}

export async function configureRateLimit(input: ConfigureRateLimitInput): Promise<void> {
  const { requestsPerSecond } = input;
  const taskQueue = input.taskQueue ?? taskQueuesOf(undefined).api;
  if (!Number.isFinite(requestsPerSecond) || requestsPerSecond <= 0) {
    throw ApplicationFailure.create({
      type: 'InvalidRateLimit',
      message: `requests_per_second must be a positive number, got ${requestsPerSecond}`,
      nonRetryable: true,
    });
  }
  const context = Context.current();
  const { client, info } = context;
  try {
    await client.workflowService.updateTaskQueueConfig({
      namespace: info.workflowNamespace ?? client.options.namespace,
      identity: client.options.identity,
      taskQueue,
      taskQueueType: TASK_QUEUE_TYPE_ACTIVITY,
      updateQueueRateLimit: {
        rateLimit: { requestsPerSecond },
        reason: `pixelmill: the run's requests_per_second (${requestsPerSecond})`,
      },
    });
  } catch (error) {
    if (!unsupported(error)) throw error;
    context.log.warn(
      `the Temporal server cannot set the rate limit of ${taskQueue}; ` +
        'each worker limits its own API calls instead (maxTaskQueueActivitiesPerSecond)',
    );
  }
}
