// On demand, not in `npm test` (a 300,000-item run takes about 12 minutes here): the run
// workflow's history at scale, with stub activities on a dev server. Every execution of the run
// must stay far below Temporal's 10,240-event warning however many shards it starts.
//
//   PIXELMILL_SCALE_ITEMS=300000 npx vitest run test/run-history-scale.test.ts
//
// PIXELMILL_SCALE_RUN_HISTORY_LIMIT=N continues the run as new past N events instead.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { historyChain } from '../bench/catalog-audit.js';
import { SHARD_SIZE, taskQueuesOf } from '../common/names.js';
import type { RunResult } from '../common/types.js';
import { RUN_HISTORY_LIMIT } from '../workflows/run.js';
import { fakeApi } from './support/fake-activities.js';
import { startDevServerEnv, withStubWorkers } from './support/temporal.js';

const items = Number(process.env.PIXELMILL_SCALE_ITEMS ?? 0);
const historyLimit = Number(process.env.PIXELMILL_SCALE_RUN_HISTORY_LIMIT ?? RUN_HISTORY_LIMIT);
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  if (items) env = await startDevServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});

it.runIf(items > 0)(
  `keeps every execution of a run of ${items} items below the history limit`,
  async () => {
    const api = fakeApi({ items, maxInFlight: 1_000, poll: { minMs: 50, maxMs: 200 } });
    const workflowId = 'pixelmill/history-scale';
    const result = await withStubWorkers(env, api.activities, async () => {
      const handle = await env.client.workflow.start('runWorkflow', {
        taskQueue: taskQueuesOf(undefined).workflow,
        workflowId,
        args: [
          { plan: { stateDir: '/nonexistent/.pixelmill', planHash: 'h' }, manifestHash: 'h', emulated: true },
        ],
      });
      return (await handle.result()) as RunResult;
    });
    const events = (await historyChain(env.client, workflowId)).map(
      ({ history }) => history.events?.length ?? 0,
    );
    const total = events.reduce((sum, n) => sum + n, 0);
    const shards = Math.ceil(items / SHARD_SIZE);
    console.log(
      `run of ${items} items: ${events.length} executions of ${events.join(', ')} events; ` +
        `${(total / shards).toFixed(1)} events per shard`,
    );
    expect(result.counts.completed).toBe(items);
    expect(api.submits).toHaveLength(items);
    // An execution past the limit only waits for what it sent to be recorded.
    for (const n of events) expect(n).toBeLessThan(historyLimit + 200);
  },
  3_600_000,
);
