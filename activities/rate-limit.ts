// The server-side half of the rate limit. configureRateLimit sets a fixed-rate run's
// requests_per_second as the dispatch rate of its account's API task queue; applyGroupRates sets
// the rates the governor discovered on the account's submit and query queues. Temporal's matching
// service then hands out API activities no faster than that, across every worker process together,
// which is what makes the limit global. Workers also pace their own calls (call-pacer.ts).
import { ApplicationFailure, Context } from '@temporalio/activity';
import { isGrpcServiceError } from '@temporalio/client';
import { FailureType } from '../common/failure-types.js';
import { taskQueuesOf } from '../common/names.js';
import type { ApplyGroupRatesInput, ConfigureRateLimitInput } from '../common/types.js';
import { TASK_QUEUE_TYPE_ACTIVITY } from '../temporal/task-queues.js';
import { reportToGovernor } from './governor-link.js';

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
      type: FailureType.InvalidRateLimit,
      message: `requests_per_second must be a positive number, got ${requestsPerSecond}`,
      nonRetryable: true,
    });
  }
  await setQueueRate(taskQueue, requestsPerSecond, `the run's requests_per_second (${requestsPerSecond})`);
}

/**
 * A governed run's first step: its account's governor is running and has set the dispatch rates
 * of the submit and query queues before the run's first call is scheduled on them (a queue
 * without a rate hands out its whole backlog at once).
 */
export async function joinRateGovernor(input: {
  account?: string;
  runId: string;
  /** A new governor's starting rate: high for a provider that documents no rate limit. */
  startPerSecond?: number;
}): Promise<void> {
  const { client } = Context.current();
  await reportToGovernor(
    client,
    input.account,
    { worker: `run ${input.runId}`, groups: {} },
    input.startPerSecond,
  );
}

/**
 * The governor's local activity (workflows/governor.ts): the rates in force become the dispatch
 * rates of the account's submit and query queues.
 */
export async function applyGroupRates(input: ApplyGroupRatesInput): Promise<void> {
  for (const { taskQueue, ratePerSecond, source } of input.queues) {
    await setQueueRate(taskQueue, ratePerSecond, `the rate governor (${source})`);
  }
}

async function setQueueRate(taskQueue: string, requestsPerSecond: number, why: string): Promise<void> {
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
        reason: `pixelmill: ${why}`,
      },
    });
  } catch (error) {
    if (!unsupported(error)) throw error;
    context.log.warn(
      `the Temporal server cannot set the rate limit of ${taskQueue}; ` +
        'each worker limits its own API calls instead',
    );
  }
}
