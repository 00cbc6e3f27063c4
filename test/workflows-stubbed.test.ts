// The run and shard workflows' logic, with stub activities on a real dev server: sharding,
// in-flight bounds, retry policy, budget, pause/resume (402), cancel, continue-as-new.
//
// Not on the time-skipping test server: it refuses a workflow task that cancels a timer which
// fired while the task was at the worker ("invalid history builder state for action",
// temporalio/sdk-java#2606 and #3088, open) and never hands the run out again. A shard's poll
// wait is such a timer whenever a signal or a result ends it early, so a test could hang there
// (it did once in six full runs). The dev server takes short timers in real time (startDevServerEnv).
//
// The tests run side by side, each run on the task queues of an API account of its own, served
// by workers of its own (its fake API): much of a test is waiting for the dev server's timers.
// Those of a thousand items and more keep the CPU busy: they run alone (it.sequential).
import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  cancelSignal,
  pauseSignal,
  resumeSignal,
  runProgressQuery,
  SHARD_SIZE,
  shardProgressQuery,
  shardWorkflowId,
  taskQueuesOf,
} from '../common/names.js';
import type { RunInput, RunResult } from '../common/types.js';
import { historyChain } from '../bench/catalog-audit.js';
import { executionOf, runningShards, terminateRun } from '../client/run-control.js';
import { startOrAttach } from '../client/runs.js';
import { fakeApi, type FakeApi, type FakeScenario } from './support/fake-activities.js';
import { startDevServerEnv, withStubWorkers } from './support/temporal.js';

let env: TestWorkflowEnvironment;
// Side by side on a busy machine, a test takes a few times as long as it does alone.
vi.setConfig({ testTimeout: 120_000 });
/**
 * Lookups 5 times a second at most: the dev server fires timers when due (startDevServerEnv), and
 * shorter waits only add lookups, history events and continue-as-new, not speed.
 */
const FAST_POLL = { minMs: 200, maxMs: 1000 };
let counter = 0;

beforeAll(async () => {
  env = await startDevServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});

/** Each fake API's run is started for an account of its own: tests run side by side. */
const accounts = new WeakMap<FakeApi, string>();

/** Runs `body` with workers on the queues of the fake API's account, serving it. */
function withWorkers<T>(api: FakeApi, body: () => Promise<T>): Promise<T> {
  return withStubWorkers(env, api.activities, body, accounts.get(api));
}

function startRun(scenario: FakeScenario, tuning?: RunInput['tuning']) {
  const api = fakeApi({ poll: FAST_POLL, ...scenario });
  const workflowId = `pixelmill/test-${++counter}`;
  const apiAccount = `stub-${counter}`;
  accounts.set(api, apiAccount);
  const start = () =>
    env.client.workflow.start('runWorkflow', {
      taskQueue: taskQueuesOf(apiAccount).workflow,
      workflowId,
      args: [
        {
          plan: { stateDir: '/nonexistent/.pixelmill', planHash: 'h' },
          manifestHash: 'h',
          apiAccount,
          emulated: true,
          ...(tuning ? { tuning } : {}),
        },
      ],
    });
  return { api, workflowId, start };
}

/** Items of the third shard, in a run of two shards and a bit: the one that waits for slots. */
const inThirdShard = (index: number): boolean => index >= 2 * SHARD_SIZE;

/**
 * The first item of each of the first two shards fails in its slice and is retried alone, where
 * its submit is held (the API keeps failing it, so Temporal keeps retrying) until `released` or
 * for 60 s at most: what a shard's tail holds after it has handed off.
 */
function firstItemsHeldUntil(
  released: (api: FakeApi) => boolean,
): Pick<FakeScenario, 'failsInSlice' | 'holdSubmit'> {
  const held = (index: number): boolean => index % SHARD_SIZE === 0 && !inThirdShard(index);
  return {
    failsInSlice: held,
    holdSubmit: async (index, fake) => {
      if (!held(index)) return;
      const end = Date.now() + 60_000;
      while (!released(fake) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    },
  };
}

/** `position` in the timeline is some event, and comes before the first held item's submit. */
function expectBeforeHeldSubmit(api: FakeApi, position: number): void {
  expect(position).toBeGreaterThanOrEqual(0);
  expect(position).toBeLessThan(api.timeline.findIndex((e) => e.event === 'submit' && e.index === 0));
}

/**
 * A slow run of three shards (10 slots between the two that submit at once, items finishing after
 * 4 lookups) with a run history limit of 20: `inLaterExecution` waits until the run has continued
 * as new with shards it started running on, and 10 items submitted.
 */
function startSlowContinuedRun(tuning: RunInput['tuning'] = {}) {
  const run = startRun(
    { items: 3 * SHARD_SIZE, lookupsToFinish: 4, maxInFlight: 10 },
    { runHistoryLimit: 20, ...tuning },
  );
  const inLaterExecution = async () => {
    const handle = await run.start();
    const first = (await handle.describe()).runId;
    await waitFor(async () => (await handle.describe()).runId !== first && run.api.submits.length >= 10);
    return handle;
  };
  return { ...run, inLaterExecution };
}

/** The shards' statuses, once none of them is running. */
async function closedStatuses(workflowId: string, shards: number[]): Promise<string[]> {
  const handles = shards.map((shard) => env.client.workflow.getHandle(shardWorkflowId(workflowId, shard)));
  const statuses = () => Promise.all(handles.map(async (handle) => (await handle.describe()).status.name));
  await waitFor(async () => !(await statuses()).includes('RUNNING'), 60_000);
  return statuses();
}

async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  intervalMs = 25,
): Promise<void> {
  for (let i = 0; i < timeoutMs / intervalMs; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error('condition not reached');
}

describe.concurrent('run and shard workflows (stub activities)', () => {
  it.sequential(
    'runs 1,200 items in 3 shards: each submitted once and stored, across several continue-as-new',
    async () => {
      // A low history limit forces every shard through continue-as-new mid-flight.
      const { api, workflowId, start } = startRun(
        { items: 1200, lookupsToFinish: 3 },
        { shardHistoryLimit: 50 },
      );
      const result = await withWorkers(api, async () => {
        const handle = await start();
        const result = (await handle.result()) as RunResult;
        for (let shard = 0; shard < 3; shard++) {
          const history = await env.client.workflow
            .getHandle(shardWorkflowId(workflowId, shard))
            .fetchHistory();
          expect(history.events?.length).toBeLessThan(50 + 600);
          expect(
            history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId,
          ).toBeTruthy();
        }
        expect((await handle.fetchHistory()).events?.length).toBeLessThan(200);
        return result;
      });
      expect(result.counts.completed).toBe(1200);
      expect(api.submits).toHaveLength(1200);
      expect(new Set(api.submits.map((s) => s.index)).size).toBe(1200);
      expect(api.stored.sort((a, b) => a - b)).toEqual(Array.from({ length: 1200 }, (_, i) => i));
      // One lookup covers a whole shard: far fewer lookups than items.
      expect(api.lookups).toBeLessThan(60);
      expect(result.apiCalls.submit).toBe(1200);
    },
  );

  it.sequential(
    'continues the run as new as its history grows, with shards running across executions',
    async () => {
      // A run history limit of 60 events: the run continues as new every few shards, while shards
      // it started are submitting, handing off and closing. Each must tell the execution of the day.
      const items = 5 * SHARD_SIZE + 100;
      const { api, workflowId, start } = startRun(
        { items, lookupsToFinish: 2, maxInFlight: 400 },
        { runHistoryLimit: 60 },
      );
      const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
      const executions = await historyChain(env.client, workflowId);
      expect(executions.length).toBeGreaterThanOrEqual(3);
      // Past the limit, an execution waits only for the signals it sent to be recorded.
      for (const { history } of executions) expect(history.events?.length).toBeLessThan(60 + 40);
      expect(result.counts).toMatchObject({ completed: items, failed: 0, cancelled: 0 });
      expect(result.apiCalls.submit).toBe(items);
      expect(result.images).toBe(items);
      expect(api.submits).toHaveLength(items);
      expect(api.stored.sort((a, b) => a - b)).toEqual(Array.from({ length: items }, (_, i) => i));
      expect(api.maxConcurrentAtApi).toBeLessThanOrEqual(400);
    },
  );

  it('cancels the shards an earlier execution of the run started', async () => {
    // The first execution starts two slow shards and hands them on; the cancel reaches a later
    // execution, which must stop them though they are not its children.
    const { api, workflowId, inLaterExecution } = startSlowContinuedRun();
    const result = await withWorkers(api, async () => {
      const handle = await inLaterExecution();
      await handle.signal(cancelSignal);
      return (await handle.result()) as RunResult;
    });
    expect((await historyChain(env.client, workflowId)).length).toBeGreaterThanOrEqual(2);
    // Two shards at a time: the third never starts, and the first two stop submitting.
    const submitted = api.submits.length;
    expect(api.submits.every((s) => !inThirdShard(s.index))).toBe(true);
    expect(submitted).toBeLessThan(2 * SHARD_SIZE);
    expect(result.counts.completed).toBe(submitted);
    expect(result.counts.cancelled).toBe(2 * SHARD_SIZE - submitted);
  });

  it('fails the run when a shard an earlier execution started fails', async () => {
    const { api, workflowId, start } = startRun(
      {
        items: 2 * SHARD_SIZE,
        // The second shard's items take many lookups: it is still running when the first fails.
        lookupsToFinish: (index) => (index < SHARD_SIZE ? 2 : 40),
        // The refused item's outcome is the one the shard records itself at its end.
        fails: (index) =>
          index === 3 ? { type: 'content_policy_violation', code: 'content_blocked' } : undefined,
        recordFails: (shard) => shard === 0,
      },
      { runHistoryLimit: 20 },
    );
    const { failure, statuses } = await withWorkers(api, async () => {
      const failure = await (await start()).result().catch((error: Error) => error);
      return { failure, statuses: await closedStatuses(workflowId, [1]) };
    });
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause?.message).toMatch(
      /^shard 1 ended: .*the outcome file cannot be written/,
    );
    expect((await historyChain(env.client, workflowId)).length).toBeGreaterThanOrEqual(2);
    // The other shard is asked to stop with it, as children of a failed run were.
    expect(statuses).toEqual(['CANCELLED']);
  });

  it("a cancel from Temporal's UI reaches the shards an earlier execution started", async () => {
    const { api, workflowId, inLaterExecution } = startSlowContinuedRun();
    const statuses = await withWorkers(api, async () => {
      const handle = await inLaterExecution();
      await handle.cancel();
      await expect(handle.result()).rejects.toThrow(WorkflowFailedError);
      return closedStatuses(workflowId, [0, 1]);
    });
    expect(statuses).toEqual(['CANCELLED', 'CANCELLED']);
  });

  it('cancel --force terminates the shards an earlier execution started', async () => {
    const { api, workflowId, inLaterExecution } = startSlowContinuedRun();
    const terminated = await withWorkers(api, async () => {
      const handle = await inLaterExecution();
      return terminateRun(env.client, await handle.describe(), 'test');
    });
    expect(terminated.sort()).toEqual([shardWorkflowId(workflowId, 0), shardWorkflowId(workflowId, 1)]);
    for (const id of terminated)
      expect((await env.client.workflow.getHandle(id).describe()).status.name).toBe('TERMINATED');
  });

  it("a shard whose run was terminated from Temporal's UI submits nothing more, stores what is in flight and ends", async () => {
    const { api, workflowId, inLaterExecution } = startSlowContinuedRun({ runCheckMs: 300 });
    const { statuses, atTerminate } = await withWorkers(api, async () => {
      const handle = await inLaterExecution();
      await handle.terminate('from the UI');
      const atTerminate = api.submits.length;
      return { statuses: await closedStatuses(workflowId, [0, 1]), atTerminate };
    });
    expect(statuses).toEqual(['COMPLETED', 'COMPLETED']);
    // Submits already under way when the run ended, at most: a slice per shard (10 in flight).
    expect(api.submits.length - atTerminate).toBeLessThanOrEqual(10);
    expect(api.submits.length).toBeLessThan(2 * SHARD_SIZE);
    // Every task the API created was collected and stored: none paid for and left behind.
    expect(new Set(api.stored)).toEqual(new Set(api.submits.map((s) => s.index)));
  });

  it('a paused shard whose run was terminated ends too', async () => {
    const { api, workflowId, inLaterExecution } = startSlowContinuedRun({ runCheckMs: 100 });
    const statuses = await withWorkers(api, async () => {
      const handle = await inLaterExecution();
      await handle.signal(pauseSignal, {});
      const shards = [0, 1].map((shard) => env.client.workflow.getHandle(shardWorkflowId(workflowId, shard)));
      const paused = async () =>
        (await Promise.all(shards.map((s) => s.query(shardProgressQuery)))).map((p) => p.paused);
      await waitFor(async () => (await paused()).every(Boolean));
      await handle.terminate('from the UI');
      return closedStatuses(workflowId, [0, 1]);
    });
    expect(statuses).toEqual(['COMPLETED', 'COMPLETED']);
  });

  it('a shard whose history is full goes on submitting until its last collects end, then continues as new', async () => {
    // Two submits of one item each scheduled at a time (the plan's rate), 50 ms each; collects of 2 s.
    const historyLimit = 80;
    const { api, workflowId, start } = startRun(
      {
        items: 300,
        lookupsToFinish: 1,
        requestsPerSecond: 2,
        collectMs: 2000,
        holdSubmit: () => new Promise((resolve) => setTimeout(resolve, 50)),
      },
      { shardHistoryLimit: historyLimit },
    );
    const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
    expect(result.counts.completed).toBe(300);
    expect(api.submits).toHaveLength(300);
    const executions = await historyChain(env.client, shardWorkflowId(workflowId, 0));
    expect(executions.length).toBeGreaterThanOrEqual(2);
    // Submits scheduled past the limit, while the collects in flight end: a lane that stopped at
    // the limit would have scheduled at most the one or two whose answers came first.
    const pastLimit = executions
      .slice(0, -1)
      .map(
        ({ history }) =>
          (history.events ?? []).filter(
            (event) =>
              Number(event.eventId) > historyLimit &&
              event.activityTaskScheduledEventAttributes?.activityType?.name === 'submitSlice',
          ).length,
      );
    expect(Math.max(...pastLimit)).toBeGreaterThanOrEqual(6);
  });

  it('a shard paused for long continues as new on its run checks alone', async () => {
    const { api, workflowId, start } = startRun(
      { items: 30, lookupsToFinish: 2, maxInFlight: 10 },
      { runCheckMs: 40, shardHistoryLimit: 25 },
    );
    const shard = shardWorkflowId(workflowId, 0);
    const result = await withWorkers(api, async () => {
      const handle = await start();
      await waitFor(() => api.submits.length >= 10);
      await handle.signal(pauseSignal, {});
      await waitFor(async () => (await handle.query(runProgressQuery)).state === 'paused');
      // Paused, with nothing left at the API: no activity runs, only the checks add events.
      await waitFor(() => api.stored.length === api.submits.length, 60_000);
      // The last activities' ends may still continue it as new once; the checks alone, again and again.
      const executions = (await historyChain(env.client, shard)).length;
      // Each look reads every execution's history: a few a second, not forty.
      await waitFor(
        async () => (await historyChain(env.client, shard)).length >= executions + 2,
        30_000,
        250,
      );
      expect(api.submits.length).toBe(api.stored.length);
      await handle.signal(resumeSignal);
      return (await handle.result()) as RunResult;
    });
    expect(result.counts.completed).toBe(30);
    expect(api.submits).toHaveLength(30);
  });

  it('a run terminated with shards running is started again only once they have ended; cancel --force ends them', async () => {
    const { api, workflowId, inLaterExecution } = startSlowContinuedRun();
    const startAgain = () =>
      startOrAttach(
        env.client,
        workflowId,
        {
          manifestFile: 'catalog.yaml',
          input: { manifestHash: 'h', emulated: true },
          freezePlan: () => Promise.reject(new Error('would start a new execution')),
        },
        true,
      );
    const terminated = await withWorkers(api, async () => {
      const handle = await inLaterExecution();
      await handle.terminate('from the UI');
      await expect(startAgain()).rejects.toThrow(
        `${workflowId} ended (terminated) with 2 shards still running: run it again once they have ended, or end them now with \`pixelmill cancel ${workflowId} --force\``,
      );
      // What `cancel --force` does with an ended run: its running shards listed, then terminated.
      const description = await handle.describe();
      const left = await runningShards(env.client, executionOf(description));
      return terminateRun(env.client, description, 'pixelmill cancel --force', left);
    });
    expect(terminated.sort()).toEqual([shardWorkflowId(workflowId, 0), shardWorkflowId(workflowId, 1)]);
    expect(await closedStatuses(workflowId, [0, 1])).toEqual(['TERMINATED', 'TERMINATED']);
    await expect(startAgain()).rejects.toThrow('would start a new execution');
  });

  it('keeps at most max_in_flight items at the API', async () => {
    // Three times the bound: slots are freed and filled again twice over.
    const { api, start } = startRun({ items: 120, lookupsToFinish: 2, maxInFlight: 40 });
    const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
    expect(result.counts.completed).toBe(120);
    expect(api.maxConcurrentAtApi).toBeLessThanOrEqual(40);
  });

  it.sequential('starts the next shard once one has submitted everything, within max_in_flight', async () => {
    // max_in_flight 1,000 runs three shards at a time with 334 slots each. A shard submits its last
    // items when its first ones finish, so it hands off holding fewer than its share: the fourth
    // shard starts on what is free while the first three still have items at the API. Only when
    // the fourth shard starts matters, not its size: 100 items are enough.
    const items = 3 * SHARD_SIZE + 100;
    const { api, start } = startRun({ items, lookupsToFinish: 3, maxInFlight: 1000 });
    const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
    expect(result.counts.completed).toBe(items);
    expect(api.maxConcurrentAtApi).toBeLessThanOrEqual(1000);
    const shardOf = (index: number): number => Math.floor(index / SHARD_SIZE);
    const firstSubmitOfShard4 = api.timeline.findIndex((e) => e.event === 'submit' && shardOf(e.index) === 3);
    // None of the first three shards had closed: each stored items after shard 4's first submit.
    const lastStores = [0, 1, 2].map((shard) =>
      api.timeline.findLastIndex((e) => e.event === 'store' && shardOf(e.index) === shard),
    );
    expect(firstSubmitOfShard4).toBeGreaterThan(0);
    expect(firstSubmitOfShard4).toBeLessThan(Math.min(...lastStores));
  });

  it.sequential(
    'hands a shard off while a submit the API keeps failing is still retrying',
    async () => {
      // max_in_flight 400 runs two shards at a time. The first item of each is held in its submit
      // until the third shard submits: the third shard must start once the first two have sent
      // everything else. Its first submit is what counts: a third shard of 100 items is enough.
      const items = 2 * SHARD_SIZE + 100;
      const thirdShardSubmitted = (api: FakeApi): boolean => api.submits.some((s) => inThirdShard(s.index));
      const { api, start } = startRun({
        items,
        maxInFlight: 400,
        ...firstItemsHeldUntil(thirdShardSubmitted),
      });
      const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
      expect(result.counts.completed).toBe(items);
      expectBeforeHeldSubmit(
        api,
        api.timeline.findIndex((e) => e.event === 'submit' && inThirdShard(e.index)),
      );
    },
    90_000,
  );

  it.sequential(
    'gives the next shard the slots a tail no longer uses while one submit is held for long',
    async () => {
      // max_in_flight 100: two shards of 50 slots each. The last 49 items of each take a few
      // lookups, so each hands off holding all its 50 slots; the first item of each is held in its
      // submit, as above, until the third shard has stored all its items. Once the slow items are
      // done, each tail is the held item alone: the third shard must run on the slots they let go
      // of, not wait for the held submits (nor crawl on a slot or two).
      const items = 2 * SHARD_SIZE + 100;
      const thirdShardStored = (api: FakeApi): boolean => api.stored.filter(inThirdShard).length === 100;
      const slow = (index: number): boolean => !inThirdShard(index) && index % SHARD_SIZE > SHARD_SIZE - 50;
      const { api, start } = startRun({
        items,
        maxInFlight: 100,
        lookupsToFinish: (index) => (slow(index) ? 4 : 1),
        ...firstItemsHeldUntil(thirdShardStored),
      });
      const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
      expect(result.counts.completed).toBe(items);
      expectBeforeHeldSubmit(
        api,
        api.timeline.findLastIndex((e) => e.event === 'store' && inThirdShard(e.index)),
      );
    },
    90_000,
  );

  it('resubmits failures the retry policy names, and reports the others with their error', async () => {
    const { api, start } = startRun({
      items: 50,
      retry: { maxAttempts: 2, on: ['generation_error'] },
      fails: (index, attempt) => {
        if (index % 10 === 0 && attempt === 1) return { type: 'generation_error', code: 'generation_failed' };
        if (index % 7 === 3 && index % 10 !== 0)
          return { type: 'content_policy_violation', code: 'content_blocked' };
        return undefined;
      },
    });
    const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
    const blocked = Array.from({ length: 50 }, (_, i) => i).filter((i) => i % 7 === 3 && i % 10 !== 0);
    expect(result.counts.failed).toBe(blocked.length);
    expect(result.counts.completed).toBe(50 - blocked.length);
    expect(
      api.submits
        .filter((s) => s.attempt === 2)
        .map((s) => s.index)
        .sort((a, b) => a - b),
    ).toEqual([0, 10, 20, 30, 40]);
    const failed = api.outcomes.filter((o) => o.status === 'failed');
    expect(failed.map((o) => o.index).sort((a, b) => a - b)).toEqual(blocked);
    expect(failed.every((o) => o.error?.code === 'content_blocked' && o.attempts === 1)).toBe(true);
  });

  it('fetches apart, then stores, the tasks whose GET did not go through in their group', async () => {
    const { api, start } = startRun({ items: 30, collectGetFails: (index) => index % 3 === 0 });
    const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
    expect(result.counts.completed).toBe(30);
    const apart = Array.from({ length: 10 }, (_, i) => 3 * i);
    expect([...api.fetchedApart].sort((a, b) => a - b)).toEqual(apart);
    expect([...api.stored].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it('settles every task of a group that failed for good apart, resubmitting those that failed', async () => {
    const { api, start } = startRun({
      items: 20,
      collectFails: true,
      retry: { maxAttempts: 2, on: ['generation_error'] },
      fails: (index, attempt) =>
        index % 5 === 0 && attempt === 1
          ? { type: 'generation_error', code: 'generation_failed' }
          : undefined,
    });
    const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
    expect(result.counts.completed).toBe(20);
    expect(new Set(api.fetchedApart).size).toBe(20);
    const resubmitted = api.submits.filter((s) => s.attempt === 2).map((s) => s.index);
    expect(resubmitted.sort((a, b) => a - b)).toEqual([0, 5, 10, 15]);
  });

  it('stops submitting at the budget and reports the rest as skipped', async () => {
    const { api, start } = startRun({ items: 100, budgetCredits: 30 });
    const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
    expect(api.submits).toHaveLength(30);
    expect(result.counts.completed).toBe(30);
    expect(result.counts.skipped).toBe(70);
    expect(
      api.outcomes.filter((o) => o.status === 'skipped').every((o) => o.error?.code === 'budget_exhausted'),
    ).toBe(true);
  });

  it.sequential('hands out the budget a run continued as new carries', async () => {
    // Three shards' planned credits: 500, 500, then the 200 left, which a later execution hands out.
    const items = 3 * SHARD_SIZE;
    const { api, workflowId, start } = startRun({ items, budgetCredits: 1_200 }, { runHistoryLimit: 20 });
    const result = await withWorkers(api, async () => (await start()).result() as Promise<RunResult>);
    expect((await historyChain(env.client, workflowId)).length).toBeGreaterThanOrEqual(2);
    expect(api.submits).toHaveLength(1_200);
    expect(result.counts.completed).toBe(1_200);
    expect(result.counts.skipped).toBe(300);
  });

  it('pauses the whole run on a 402, and resume continues it', async () => {
    const { api, start } = startRun({ items: 40, insufficientCredits: 1 });
    const result = await withWorkers(api, async () => {
      const handle = await start();
      await waitFor(async () => (await handle.query(runProgressQuery)).state === 'paused');
      const progress = await handle.query(runProgressQuery);
      expect(progress.reason).toMatch(/402/);
      await handle.signal(resumeSignal);
      return (await handle.result()) as RunResult;
    });
    expect(result.counts.completed).toBe(40);
    expect(api.submits).toHaveLength(40);
  });

  it('pauses the whole run when the API refuses the key (401), failing no item', async () => {
    const { api, start } = startRun({ items: 40, keyRefused: 3 });
    const result = await withWorkers(api, async () => {
      const handle = await start();
      await waitFor(async () => (await handle.query(runProgressQuery)).state === 'paused');
      const progress = await handle.query(runProgressQuery);
      expect(progress.reason).toMatch(/^the API refused the key \(401\): .*`pixelmill resume`/);
      expect(progress.finished.counts.failed).toBe(0);
      await handle.signal(resumeSignal);
      return (await handle.result()) as RunResult;
    });
    expect(result.counts).toMatchObject({ completed: 40, failed: 0 });
    expect(api.submits).toHaveLength(40);
    // The refused calls count: the API answered them.
    expect(result.apiCalls.submit).toBeGreaterThan(40);
  });

  it('cancel collects what is in flight and reports the rest as cancelled', async () => {
    const { api, start } = startRun({ items: 400, lookupsToFinish: 4, maxInFlight: 10 });
    const result = await withWorkers(api, async () => {
      const handle = await start();
      await waitFor(() => api.submits.length >= 10);
      await handle.signal(cancelSignal);
      return (await handle.result()) as RunResult;
    });
    const submitted = api.submits.length;
    expect(submitted).toBeLessThan(400);
    expect(result.counts.completed).toBe(submitted);
    expect(result.counts.cancelled).toBe(400 - submitted);
  });
});

describe.concurrent('an incremental run', () => {
  it.each([
    { carried: 900, runHistoryLimit: undefined },
    // Six ranges of carried items, four checked at a time: the run continues as new in between.
    { carried: 3_000, runHistoryLimit: 20 },
  ])(
    'generates the items to generate and the carried ones that cannot be had, nothing else ($carried carried, run history limit $runHistoryLimit)',
    async ({ carried, runHistoryLimit }) => {
      const items = 300 + carried;
      const failing = new Set([400, items - 250, items - 1]);
      const { api, workflowId, start } = startRun(
        { items, generate: 300, carryFails: (index) => failing.has(index) },
        runHistoryLimit ? { runHistoryLimit } : undefined,
      );
      const { result, shardCount } = await withWorkers(api, async () => {
        const handle = await start();
        const result = (await handle.result()) as RunResult;
        return { result, shardCount: (await handle.query(runProgressQuery)).shardCount };
      });
      const submitted = api.submits.map((submit) => submit.index).sort((a, b) => a - b);
      expect(submitted).toEqual([...Array.from({ length: 300 }, (_, k) => k), ...failing]);
      expect(result.carryOver).toEqual({
        items: carried,
        reused: carried - 3,
        restored: 0,
        moved: 0,
        regenerated: 3,
      });
      // One shard for the 300, one for the three carried items generated after all, numbered after the ranges.
      const regeneration = env.client.workflow.getHandle(
        shardWorkflowId(workflowId, 1 + Math.ceil(carried / SHARD_SIZE)),
      );
      expect((await regeneration.describe()).status.name).toBe('COMPLETED');
      expect(shardCount).toBe(2);
      if (runHistoryLimit)
        expect((await historyChain(env.client, workflowId)).length).toBeGreaterThanOrEqual(2);
    },
    120_000,
  );
});
