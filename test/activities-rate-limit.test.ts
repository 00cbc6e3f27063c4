// configureRateLimit against a real Temporal dev server: the run's requests_per_second becomes
// the server-side dispatch rate of the API task queue, which every worker then shares.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { taskQueuesOf } from '../common/names.js';

/** An account's API queue, as a run of that account names it to configureRateLimit. */
const API_QUEUE = taskQueuesOf('a0123456789abcdef').api;
import { startDevServerEnv } from './support/temporal.js';
import { applicationFailure, inActivity } from './activities-fixture.js';

/** temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY */
const ACTIVITY_QUEUE = 2;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await startDevServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});

async function queueRateLimit(): Promise<number | undefined> {
  const described = await env.client.workflowService.describeTaskQueue({
    namespace: env.namespace ?? 'default',
    taskQueue: { name: API_QUEUE },
    taskQueueType: ACTIVITY_QUEUE,
    reportConfig: true,
  });
  return described.config?.queueRateLimit?.rateLimit?.requestsPerSecond ?? undefined;
}

describe('configureRateLimit', () => {
  it('sets and changes the rate limit of the API task queue on the server', async () => {
    const { configureRateLimit } = createActivities();
    const info = { workflowNamespace: env.namespace ?? 'default' };
    await inActivity(configureRateLimit, { requestsPerSecond: 3.5, taskQueue: API_QUEUE }, info, env.client)
      .result;
    // Task queue config propagates to matching asynchronously: read until it arrives.
    await expect.poll(queueRateLimit, { timeout: 15_000 }).toBe(3.5);
    await inActivity(configureRateLimit, { requestsPerSecond: 12, taskQueue: API_QUEUE }, info, env.client)
      .result;
    await expect.poll(queueRateLimit, { timeout: 15_000 }).toBe(12);
  });

  it('refuses a rate that is not a positive number, without retries', async () => {
    const { configureRateLimit } = createActivities();
    const failure = await applicationFailure(
      inActivity(configureRateLimit, { requestsPerSecond: 0 }, {}, env.client).result,
    );
    expect(failure.type).toBe('InvalidRateLimit');
    expect(failure.nonRetryable).toBe(true);
  });
});
