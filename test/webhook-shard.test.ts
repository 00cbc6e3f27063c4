// The shard's side of the webhook fast path, with stub activities on the time-skipping server: a
// task's `taskFinished` signal replaces its lookup and its GET, even when the webhook outruns the
// submit's own result (fast tasks), and duplicates change nothing.
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_TASK_QUEUE,
  shardWorkflowId,
  taskFinishedSignal,
  TRANSFER_TASK_QUEUE,
  WORKFLOW_TASK_QUEUE,
} from '../common/names.js';
import type { RunInput, RunResult, SubmitItemInput } from '../common/types.js';
import { fakeApi } from './support/fake-activities.js';
import { startTimeSkippingEnv } from './support/temporal.js';

const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
const RUN_ID = 'pixelmill/webhook-shard';
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkippingEnv();
});
afterAll(async () => {
  await env?.teardown();
});

describe('shard with webhooks', () => {
  it('takes results from signals that arrive before the submit returns: no lookup, no GET', async () => {
    const items = 40;
    const api = fakeApi({ items });
    const submitted = api.activities.submitItem!;
    const webhooks: string[] = [];
    // The "webhook": the task is finished and signalled (twice) before submitItem hands back its id.
    api.activities.submitItem = async (input: SubmitItemInput) => {
      const { taskId } = await submitted(input);
      expect(input.webhook).toMatch(/^http:\/\/hooks\.test\/hooks\/pixelmill%2Fwebhook-shard%2Fshard-0001$/);
      const shard = env.client.workflow.getHandle(shardWorkflowId(RUN_ID, 0));
      const task = {
        taskId,
        status: 'completed',
        urls: [`http://results.invalid/${taskId}/0.png`],
        creditsCost: 1,
      };
      await shard.signal(taskFinishedSignal, task);
      await shard.signal(taskFinishedSignal, task);
      webhooks.push(taskId);
      return { taskId };
    };

    const common = { connection: env.nativeConnection, activities: api.activities };
    const workers = await Promise.all([
      Worker.create({ ...common, taskQueue: WORKFLOW_TASK_QUEUE, workflowsPath }),
      Worker.create({ ...common, taskQueue: API_TASK_QUEUE }),
      Worker.create({ ...common, taskQueue: TRANSFER_TASK_QUEUE }),
    ]);
    const input: RunInput = {
      manifestFile: '/nonexistent.yaml',
      manifestHash: 'h',
      emulated: true,
      webhookBaseUrl: 'http://hooks.test/hooks',
    };
    const run = () =>
      env.client.workflow.execute('runWorkflow', {
        taskQueue: WORKFLOW_TASK_QUEUE,
        workflowId: RUN_ID,
        args: [input],
      }) as Promise<RunResult>;
    const result = await workers.reduce<() => Promise<RunResult>>(
      (body, worker) => () => worker.runUntil(body()),
      run,
    )();

    expect(webhooks).toHaveLength(items);
    expect(result.counts.stored).toBe(items);
    expect(api.stored.sort((a, b) => a - b)).toEqual(Array.from({ length: items }, (_, i) => i));
    expect({ lookups: api.lookups, gets: api.gets }).toEqual({ lookups: 0, gets: 0 });
    expect(result.apiCalls).toEqual({ submit: items, lookup: 0, get: 0 });
  });
});
