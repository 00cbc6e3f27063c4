// The shard's side of the webhook fast path, with stub activities on a real dev server: a
// task's `taskFinished` signal replaces its lookup and its GET, even when the webhook outruns the
// submit's own result (fast tasks), and duplicates change nothing.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardWorkflowId, taskFinishedSignal, taskQueuesOf } from '../common/names.js';
import type { RunInput, RunResult, SubmitItemInput } from '../common/types.js';
import { fakeApi } from './support/fake-activities.js';
import { startDevServerEnv, withStubWorkers } from './support/temporal.js';

const RUN_ID = 'pixelmill/webhook-shard';
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startDevServerEnv();
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
      expect(input.webhook).toMatch(
        /^http:\/\/hooks\.test\/hooks\/apimart\/pixelmill%2Fwebhook-shard%2Fshard-0001$/,
      );
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

    const input: RunInput = {
      plan: { stateDir: '/nonexistent/.pixelmill', planHash: 'h' },
      manifestHash: 'h',
      emulated: true,
      webhookBaseUrl: 'http://hooks.test/hooks/apimart',
    };
    const run = () =>
      env.client.workflow.execute('runWorkflow', {
        taskQueue: taskQueuesOf(undefined).workflow,
        workflowId: RUN_ID,
        args: [input],
      }) as Promise<RunResult>;
    const result = await withStubWorkers(env, api.activities, run);

    expect(webhooks).toHaveLength(items);
    expect(result.counts.completed).toBe(items);
    expect(api.stored.sort((a, b) => a - b)).toEqual(Array.from({ length: items }, (_, i) => i));
    expect({ lookups: api.lookups, gets: api.gets }).toEqual({ lookups: 0, gets: 0 });
    expect(result.apiCalls).toEqual({ submit: items, lookup: 0, get: 0 });
  });
});
