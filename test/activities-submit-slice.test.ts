// submitSlice against the real emulator: each item of a slice is a submit call of its own,
// journaled as it is answered, so a retry of the slice takes what it got and submits the rest;
// an item the API refuses for good, or keeps failing, never fails its neighbours; items whose turn
// comes after the run's deadline are not sent.
import { CancelledFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { apiCallCounts, groundTruth } from '../bench/catalog-audit.js';
import type { SubmitSliceInput } from '../common/types.js';
import { readSubmitJournals } from '../runstate/index.js';
import { inActivity, writeManifest } from './activities-fixture.js';
import { startTestEmulator } from './support/emulator.js';
import { frozenPlan } from './support/plan.js';

const KEY = 'sk-live-slice-key';
const accounts = [{ id: 'acct_slice', keys: [{ key: KEY }] }];
const SHARD = 'run/tables/shard-0';

async function prepared(items: string[], faults: Record<string, unknown> = {}) {
  const emulator = await startTestEmulator({ accounts, faults });
  const fixture = writeManifest(['name: tables', 'output: ./out', 'items:', ...items]);
  const activities = createActivities({ apiBaseUrl: emulator.url, apiKey: KEY, apiWorkers: 1 });
  const { plan } = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });
  const slice = (
    input: Omit<SubmitSliceInput, 'plan'>,
    attempt = 1,
    info: ActivityTiming = {},
    onHeartbeat?: Parameters<typeof inActivity>[4],
  ) =>
    inActivity(
      activities.submitSlice,
      { plan, ...input },
      { workflowExecution: { workflowId: SHARD, runId: 'run-a' }, activityId: '4', attempt, ...info },
      undefined,
      onHeartbeat,
    ).result;
  return { emulator, plan, slice };
}

type ActivityTiming = { heartbeatTimeoutMs?: number; currentAttemptScheduledTimestampMs?: number };

/** A first attempt started 40 s after it was scheduled, its heartbeat timeout 10 s: late. */
const LATE: ActivityTiming = { heartbeatTimeoutMs: 10_000, currentAttemptScheduledTimestampMs: Date.now() - 40_000 };

const firstTry = (indices: number[]) => ({ items: indices.map((index) => ({ index, attempt: 1 })) });

describe('submitSlice', () => {
  it('submits each item once as a call of its own; a retry takes the tasks it got and submits the rest', async () => {
    const { emulator, plan, slice } = await prepared(
      ['oak', 'pine', 'elm', 'ash'].map((id) => `  - { id: ${id}, prompt: a ${id} table }`),
    );
    // The attempt a worker died in had sent the first two items.
    const died = await slice(firstTry([0, 1]));
    expect(died.calls).toBe(2);
    const retried = await slice(firstTry([0, 1, 2, 3]), 2);

    const byIndex = new Map(retried.items.map((item) => [item.index, item.taskId]));
    for (const item of died.items) expect(byIndex.get(item.index)).toBe(item.taskId);
    // Its own two submits, and the two of the attempt that died, which never reported them.
    expect(retried.calls).toBe(4);
    const tasks = await groundTruth(emulator);
    expect(tasks.map((task) => task.id).sort()).toEqual([...byIndex.values()].sort());
    const journal = readSubmitJournals(plan.stateDir).map(({ at: _at, task: _task, ...line }) => line);
    expect(journal).toEqual(
      expect.arrayContaining([
        { run: 'run-a', activity: '4/0' },
        { run: 'run-a', activity: '4/0', taken_over_at_attempt: 2 },
        { run: 'run-a', activity: '4/3' },
      ]),
    );
    await emulator.close();
  });

  it('a first attempt delivered long after it was handed out takes what its retry got, and submits nothing again', async () => {
    const { emulator, plan, slice } = await prepared(
      ['oak', 'pine', 'elm'].map((id) => `  - { id: ${id}, prompt: a ${id} table }`),
    );
    // A partition held attempt 1's task; Temporal timed it out and attempt 2 ran elsewhere.
    const retry = await slice(firstTry([0, 1, 2]), 2);
    const submits = (): number => apiCallCounts(emulator.stats()).submit;
    expect(submits()).toBe(3);
    const late = await slice(firstTry([0, 1, 2]), 1, LATE);
    expect(late.items).toEqual(retry.items.map(({ index, taskId }) => ({ index, taskId })));
    expect(submits()).toBe(3);
    const takeovers = readSubmitJournals(plan.stateDir).filter((line) => line.taken_over_at_attempt === 1);
    expect(takeovers).toHaveLength(3);

    // On time, a first attempt reads no journal (nothing can have run before it): it sends.
    await slice(firstTry([0]), 1, { heartbeatTimeoutMs: 10_000, currentAttemptScheduledTimestampMs: Date.now() });
    expect(submits()).toBe(4);
    await emulator.close();
  });

  it('a late attempt Temporal has given up (its heartbeat answered NOT_FOUND) submits nothing, not even what no journal holds', async () => {
    const { emulator, slice } = await prepared(['  - { id: oak, prompt: an oak table }']);
    const given = slice(firstTry([0]), 1, LATE, (env) => env.cancel('NOT_FOUND'));
    await expect(given).rejects.toThrow(CancelledFailure);
    expect(await groundTruth(emulator)).toHaveLength(0);
    await emulator.close();
  });

  it('an item refused for good, and one the API keeps failing, leave the others submitted', async () => {
    const { emulator, slice } = await prepared(
      [
        '  - { id: oak, prompt: an oak table }',
        // The emulator cannot fetch this reference: a 400, for good.
        '  - { id: pine, prompt: a pine table, image_urls: ["http://127.0.0.1:9/pine.png"] }',
        // It answers 500 build_request_failed every time: a failure a retry may heal, as far as one answer tells.
        '  - { id: elm, prompt: a cursed elm table }',
        '  - { id: ash, prompt: an ash table }',
      ],
      { poisoned_prompt_words: ['cursed'] },
    );
    const { items, calls } = await slice(firstTry([0, 1, 2, 3]));
    const byIndex = new Map(items.map((item) => [item.index, item]));
    expect(byIndex.get(0)?.taskId).toBeTruthy();
    expect(byIndex.get(3)?.taskId).toBeTruthy();
    expect(byIndex.get(1)).toMatchObject({ index: 1, failure: { type: 'BadRequestError' } });
    expect(byIndex.get(2)).toMatchObject({
      index: 2,
      retryAs: { call: '4/2', answer: '500 build_request_failed' },
    });
    expect(calls).toBe(4);
    expect(await groundTruth(emulator)).toHaveLength(2);
    await emulator.close();
  });

  it('sends nothing once the run is past its deadline: every item back to the queue', async () => {
    const { emulator, slice } = await prepared(['  - { id: oak, prompt: an oak table }']);
    const { items, calls } = await slice({ ...firstTry([0]), notAfter: Date.now() - 1 });
    expect(items).toEqual([{ index: 0, untried: true }]);
    expect(calls).toBe(0);
    expect(await groundTruth(emulator)).toHaveLength(0);
    await emulator.close();
  });
});
