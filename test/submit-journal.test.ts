// A slice of submits whose result Temporal never recorded (its worker died midway, after the API
// answered some of its items) is retried by Temporal, and the retry must take the tasks the first
// attempt created rather than create and bill second ones (activities/submit-journal.ts). A real
// dev server runs the real workflows and activities against the real emulator over HTTP; only the
// death is simulated: the first attempt of every slice submits its first half for real, then
// fails, as a killed worker's times out.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivityRuntime, type ActivityRuntime } from '../activities/index.js';
import { readSubmitJournals, stateDirOf } from '../runstate/index.js';
import { groundTruth } from '../bench/catalog-audit.js';
import { taskQueuesOf } from '../common/names.js';
import type { RunResult, SubmitSliceInput } from '../common/types.js';
import { writeManifest } from './activities-fixture.js';
import { startTestEmulator } from './support/emulator.js';
import { startDevServerEnv, withStubWorkers } from './support/temporal.js';
import { frozenPlan } from './support/plan.js';

const KEY = 'sk-live-journal';
const ITEMS = 6;
let env: TestWorkflowEnvironment;
let runtime: ActivityRuntime | undefined;

beforeAll(async () => {
  env = await startDevServerEnv();
});
afterAll(async () => {
  await runtime?.close();
  await env?.teardown();
});

describe('the submit journal', () => {
  it('a slice retried after its worker died midway takes the tasks it created and submits the rest', async () => {
    const emulator = await startTestEmulator({
      accounts: [{ id: 'acct_journal', keys: [{ key: KEY }] }],
      time_scale: 0.01,
      // The journal alone: a provider without idempotency keys.
      idempotency: { enabled: false, ttl_seconds: 60 },
    });
    const fixture = writeManifest([
      'name: journal',
      `api: { base_url: "${emulator.url}" }`,
      'output: ./out',
      'items:',
      ...Array.from({ length: ITEMS }, (_, i) => `  - { id: p${i}, prompt: "journal product ${i}" }`),
    ]);
    runtime = createActivityRuntime({ apiKey: KEY, apiWorkers: 1 });
    const real = runtime.activities;
    const firstAttempts: string[] = [];
    const sliceSizes: number[] = [];
    const activities = {
      ...real,
      async submitSlice(input: SubmitSliceInput) {
        if (Context.current().info.attempt > 1) return real.submitSlice(input);
        sliceSizes.push(input.items.length);
        const died = await real.submitSlice({
          ...input,
          items: input.items.slice(0, Math.ceil(input.items.length / 2)),
        });
        for (const item of died.items) if (item.taskId) firstAttempts.push(item.taskId);
        // BENIGN: the worker logs it at debug level, not as a warning with a stack.
        throw ApplicationFailure.create({
          type: 'LostResult',
          message: 'the result never reached Temporal (simulated)',
          category: 'BENIGN',
        });
      },
    };

    const plan = await frozenPlan(fixture.file);
    const result = await withStubWorkers(env, activities, () =>
      env.client.workflow.execute('runWorkflow', {
        taskQueue: taskQueuesOf(undefined).workflow,
        workflowId: 'pixelmill/journal-test',
        args: [{ plan, manifestHash: fixture.hash, emulated: true }],
      }),
    );

    expect((result as RunResult).counts.completed).toBe(ITEMS);
    // Slices of several items, each cut halfway: some tasks made before the death, some after.
    expect(Math.max(...sliceSizes)).toBeGreaterThan(1);
    expect(firstAttempts.length).toBeGreaterThan(0);
    expect(firstAttempts.length).toBeLessThan(ITEMS);
    // One task per item at the API: each retry took over its first attempt's tasks.
    const tasks = await groundTruth(emulator);
    expect(tasks).toHaveLength(ITEMS);
    expect(tasks.map((task) => task.id)).toEqual(expect.arrayContaining(firstAttempts));
    const takeovers = readSubmitJournals(stateDirOf(fixture.outputDir)).filter(
      (line) => line.taken_over_at_attempt === 2,
    );
    expect(takeovers.map((line) => line.task).sort()).toEqual([...firstAttempts].sort());
  });

  it('a submit whose answer was lost on the wire is sent again with its Idempotency-Key: one task', async () => {
    // Half the submits create their task and lose the answer: nothing reaches the journal, so
    // only the key (the same on every attempt of a call) keeps the retry from a second task.
    const emulator = await startTestEmulator({
      accounts: [{ id: 'acct_keys', keys: [{ key: KEY }] }],
      time_scale: 0.01,
      seed: 7,
      faults: { lost_submit_response_rate: 0.5 },
    });
    const fixture = writeManifest([
      'name: keys',
      `api: { base_url: "${emulator.url}" }`,
      'output: ./out',
      'items:',
      ...Array.from({ length: ITEMS }, (_, i) => `  - { id: k${i}, prompt: "keyed product ${i}" }`),
    ]);
    const keyed = createActivityRuntime({ apiKey: KEY, apiWorkers: 1 });
    try {
      const plan = await frozenPlan(fixture.file);
      const result = await withStubWorkers(env, keyed.activities, () =>
        env.client.workflow.execute('runWorkflow', {
          taskQueue: taskQueuesOf(undefined).workflow,
          workflowId: 'pixelmill/idempotency-key-test',
          args: [{ plan, manifestHash: fixture.hash, emulated: true }],
        }),
      );
      expect((result as RunResult).counts.completed).toBe(ITEMS);
      const lost = emulator.injectedFaults().lost_submit_response;
      expect(lost).toBeGreaterThan(0);
      // Every lost answer was followed by a retry with the same key and body: a replay, not a task.
      expect(emulator.stats().idempotent_replays).toBe(lost);
      expect(await groundTruth(emulator)).toHaveLength(ITEMS);
    } finally {
      await keyed.close();
      await emulator.close();
    }
  });
});
