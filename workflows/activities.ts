// How workflows call activities: which task queue each runs on, its timeouts and retries.
// Temporal owns every retry (the activities themselves never loop), and a retryable API error
// carries the server's Retry-After as `nextRetryDelay`.
import { proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities/index.js';
import type { TaskQueues } from '../common/names.js';
import type { GovernedCalls } from '../common/types.js';

type Activities = ReturnType<typeof createActivities>;

/**
 * One API call each, on the rate-limited queue. No attempt limit: a service that is down
 * overnight should delay the run, not fail its items. No schedule-to-start limit either: waiting
 * in the queue is how the rate limit works.
 */
const apiRetry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' };

/** Close to the client's own limits (10 s to connect, 30 s for headers): a call that hangs. */
const API_CALL_TIMEOUT = '45 seconds';
/**
 * A worker that died is noticed when its activities miss their heartbeats, not at their
 * start-to-close timeout. Running activities beat every 3 s (activities/context.ts), and the
 * worker sends a beat at most 3 s late (maxHeartbeatThrottleInterval in worker/workers.ts).
 */
const HEARTBEAT_TIMEOUT = '10 seconds';

/**
 * The activities of a run, on the task queues of its API account (common/names.ts). A fixed-rate
 * run's API calls share the account's API queue; a governed run's go to the submit and query
 * queues, whose rates the account's governor sets, under the run's fairness key.
 */
export function activitiesOn(queues: TaskQueues, governed?: GovernedCalls) {
  const apiCall = {
    startToCloseTimeout: API_CALL_TIMEOUT,
    heartbeatTimeout: HEARTBEAT_TIMEOUT,
    retry: apiRetry,
  };
  const fairness = governed ? { fairnessKey: governed.fairnessKey } : {};
  /** Tracking outranks submitting: results must be fetched long before their URLs expire. */
  const { lookupTasks, fetchTask, cancelTasks } = proxyActivities<Activities>({
    ...apiCall,
    taskQueue: governed ? queues.query : queues.api,
    priority: { priorityKey: 1, ...fairness },
  });
  const submitting = {
    ...apiCall,
    taskQueue: governed ? queues.submit : queues.api,
    priority: { priorityKey: 3, ...fairness },
  };
  const { submitItem } = proxyActivities<Activities>(submitting);
  /** A slice's turns last SLICE_BUDGET_MS; then its last submits are answered, each within the client's limits. */
  const { submitSlice } = proxyActivities<Activities>({ ...submitting, startToCloseTimeout: '2 minutes' });

  /**
   * Downloads, copies and storage writes (of new results, and of an incremental run's carried
   * ones): heartbeats record what is done, so a retry resumes. collectResults also GETs its
   * tasks, one try each in its turn at the run's rate (a GET that fails is the workflow's to
   * fetch apart): API calls outside the API queues, paced by the workers' rate gates.
   */
  const { storeResults, collectResults, carryOver } = proxyActivities<Activities>({
    taskQueue: queues.transfer,
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: HEARTBEAT_TIMEOUT,
    retry: {
      initialInterval: '2 seconds',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      maximumAttempts: 12,
    },
  });

  /**
   * Local bookkeeping: the plan, outcome files, the report, the queue's rate limit. They beat
   * like the others, but validating a million items holds the event loop for seconds, so a dead
   * worker's bookkeeping is noticed after a minute rather than at its 10-minute limit.
   */
  const { prepareRun, planShard, recordOutcomes, writeReport, configureRateLimit, joinRateGovernor } =
    proxyActivities<Activities>({
      taskQueue: queues.workflow,
      startToCloseTimeout: '10 minutes',
      heartbeatTimeout: '1 minute',
      retry: {
        initialInterval: '1 second',
        backoffCoefficient: 2,
        maximumInterval: '30 seconds',
        maximumAttempts: 10,
      },
    });

  return {
    lookupTasks,
    fetchTask,
    cancelTasks,
    submitItem,
    submitSlice,
    storeResults,
    collectResults,
    carryOver,
    prepareRun,
    planShard,
    recordOutcomes,
    writeReport,
    configureRateLimit,
    joinRateGovernor,
  };
}

export type ActivitiesOn = ReturnType<typeof activitiesOn>;

/**
 * The batch shard's activities (workflows/batch-shard.ts): a batch's submit on the submit queue,
 * its polls and cancel on the query queue, its collect (a stream of up to gigabytes, heartbeating
 * its byte offset) on the transfer queue, and the held calls of sync mode on the submit queue.
 */
export function batchActivitiesOn(queues: TaskQueues, governed?: GovernedCalls) {
  const fairness = governed ? { fairnessKey: governed.fairnessKey } : {};
  const apiCall = {
    startToCloseTimeout: API_CALL_TIMEOUT,
    heartbeatTimeout: HEARTBEAT_TIMEOUT,
    retry: apiRetry,
  };
  const { openaiBatchStatus, openaiBatchCancel } = proxyActivities<Activities>({
    ...apiCall,
    taskQueue: governed ? queues.query : queues.api,
    priority: { priorityKey: 1, ...fairness },
  });
  // A list of batches, an upload of up to 500 lines and a create: a few calls in one activity.
  const { openaiBatchSubmit } = proxyActivities<Activities>({
    ...apiCall,
    startToCloseTimeout: '5 minutes',
    taskQueue: governed ? queues.submit : queues.api,
    priority: { priorityKey: 3, ...fairness },
  });
  /** A held call answers within minutes; its heartbeats show it alive meanwhile. */
  const { openaiGenerate } = proxyActivities<Activities>({
    ...apiCall,
    startToCloseTimeout: '6 minutes',
    taskQueue: governed ? queues.submit : queues.api,
    priority: { priorityKey: 3, ...fairness },
  });
  /** Streams the batch's files (1-1.5 GB for 500 images) at the worker's pace; a retry resumes at its byte offset. */
  const { openaiBatchCollect } = proxyActivities<Activities>({
    taskQueue: queues.transfer,
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: HEARTBEAT_TIMEOUT,
    retry: {
      initialInterval: '2 seconds',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      maximumAttempts: 20,
    },
  });
  const { recordOutcomes, planShard } = proxyActivities<Activities>({
    taskQueue: queues.workflow,
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '1 minute',
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: 10,
    },
  });
  return {
    openaiBatchSubmit,
    openaiBatchStatus,
    openaiBatchCancel,
    openaiBatchCollect,
    openaiGenerate,
    recordOutcomes,
    planShard,
  };
}

export type BatchActivitiesOn = ReturnType<typeof batchActivitiesOn>;
