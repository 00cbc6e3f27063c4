// collectResults against the real emulator: one activity GETs a group of finished tasks in their
// turn and stores the images of those that completed; a result a webhook told is not asked for
// again; a task its GET cannot settle comes back without a result (the workflow fetches it
// apart); a retry resumes from the heartbeat without asking or downloading again, and counts the
// GETs the failed attempt made.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { COLLECT_PARALLEL } from '../activities/collect-results.js';
import type { StoreHeartbeat } from '../activities/store-results.js';
import type { CollectRequest, CollectResultsInput } from '../common/types.js';
import { apiCallCounts } from '../bench/catalog-audit.js';
import { StorageUnavailableError } from '../storage/errors.js';
import type { ResultStore } from '../storage/result-store.js';
import {
  applicationFailure,
  inActivity,
  servedImage,
  storesRefusing,
  writeManifest,
} from './activities-fixture.js';
import { ManualClock, startTestEmulator } from './support/emulator.js';
import { frozenPlan } from './support/plan.js';

const KEY = 'sk-live-collect-key';
const accounts = [{ id: 'acct_collect', keys: [{ key: KEY }] }];
const GET_ROUTE = 'GET /v1/tasks/{id}';

const TABLES = [
  '  - { id: oak, prompt: an oak table, n: 2 }',
  '  - { id: pine, prompt: a pine table }',
  '  - { id: elm, prompt: an elm table }',
];

/** Submitted items (by default three, oak with 2 images), on the emulator's manual clock: not finished until it moves. */
async function submittedRun(items: string[] = TABLES) {
  const clock = new ManualClock();
  const emulator = await startTestEmulator({ accounts }, { clock });
  const fixture = writeManifest([
    'name: tables',
    'output: { dir: ./out, path_template: "{id}-{index}.{ext}" }',
    'items:',
    ...items,
  ]);
  const activities = createActivities({ apiBaseUrl: emulator.url, apiKey: KEY });
  const { plan } = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });
  const requests: CollectRequest[] = [];
  for (let index = 0; index < items.length; index++) {
    const { taskId } = await activities.submitItem({ plan, index, attempt: 1 });
    requests.push({ index, taskId, attempts: 1 });
  }
  const input: CollectResultsInput = { plan, shard: 0, items: requests };
  return { clock, emulator, fixture, activities, input };
}

function outcomeIds(stateDir: string, hash: string): string[] {
  const file = join(stateDir, `outcomes-${hash.slice(0, 16)}`, 'shard-0001.jsonl');
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { id: string }).id);
}

/** A local store that cannot write `id`'s images (a store that is down for them). */
const unavailableFor = (id: string): ((outputDir: string) => ResultStore) =>
  storesRefusing((path, outputDir) =>
    path.startsWith(`${id}-`) ? new StorageUnavailableError(`${outputDir}: unavailable`) : undefined,
  );

describe('collectResults', () => {
  it('GETs each task once and stores the images of those that completed, in one activity', async () => {
    const { clock, emulator, fixture, activities, input } = await submittedRun();
    clock.advance(10 * 60_000);
    const output = await inActivity(activities.collectResults, input).result;
    expect(output.calls).toBe(3);
    expect(emulator.stats().requests[GET_ROUTE]).toEqual({ '200': 3 });
    expect(output.items.map((item) => [item.index, item.result?.status, item.stored])).toEqual([
      [0, 'completed', { index: 0, status: 'completed', images: 2 }],
      [1, 'completed', { index: 1, status: 'completed', images: 1 }],
      [2, 'completed', { index: 2, status: 'completed', images: 1 }],
    ]);
    const oak = output.items[0]!.result!;
    expect(oak.urls).toHaveLength(2);
    expect(oak.creditsCost).toBe(2);
    const onDisk = readFileSync(join(fixture.outputDir, 'oak-1.png'));
    expect(onDisk.length).toBe((await servedImage(oak.urls![1]!)).bytes);
    expect(outcomeIds(input.plan.stateDir, fixture.hash).sort()).toEqual(['elm', 'oak', 'pine']);
  });

  it('takes the result a webhook told without a GET, and returns a task still running without one', async () => {
    const { clock, emulator, activities, input } = await submittedRun();
    clock.advance(10 * 60_000);
    const told = await activities.fetchTask({ plan: input.plan, taskId: input.items[0]!.taskId });
    // elm's task is one the API has not finished: submitted after the clock moved on.
    const elm = await activities.submitItem({ plan: input.plan, index: 2, attempt: 2 });
    const getsBefore = apiCallCounts(emulator.stats()).get;
    const output = await inActivity(activities.collectResults, {
      ...input,
      items: [
        { ...input.items[0]!, known: { status: told.status, urls: told.urls!, creditsCost: 2 } },
        input.items[1]!,
        { ...input.items[2]!, taskId: elm.taskId },
      ],
    }).result;
    // pine and elm were asked for; oak was not.
    expect(output.calls).toBe(2);
    expect(apiCallCounts(emulator.stats()).get - getsBefore).toBe(2);
    expect(output.items.map((item) => [item.result?.status, item.stored?.status])).toEqual([
      ['completed', 'completed'],
      ['completed', 'completed'],
      [undefined, undefined],
    ]);
  });

  it('on a retry, asks for no task again and downloads nothing it stored before', async () => {
    const { clock, emulator, fixture, activities, input } = await submittedRun();
    clock.advance(10 * 60_000);
    // The first attempt stores oak and elm, then fails on pine: its last beat says what it did.
    const failing = createActivities({
      apiBaseUrl: emulator.url,
      apiKey: KEY,
      resultStore: unavailableFor('pine'),
    });
    const first = inActivity(failing.collectResults, input);
    const failure = await applicationFailure(first.result);
    expect(failure.nonRetryable).toBe(false);
    const previous = (first.heartbeats as StoreHeartbeat[]).at(-1)!;
    expect(previous.done.map((item) => item.index).sort()).toEqual([0, 2]);
    expect(previous.results?.map(([index]) => index).sort()).toEqual([0, 1, 2]);
    expect(previous.calls).toBe(3);
    const before = apiCallCounts(emulator.stats());
    const retry = await inActivity(activities.collectResults, input, {
      heartbeatDetails: previous,
      attempt: 2,
    }).result;
    expect(retry.items.map((item) => item.stored?.status)).toEqual(['completed', 'completed', 'completed']);
    const after = apiCallCounts(emulator.stats());
    // The first attempt's GETs, counted once: the retry made none.
    expect(retry.calls).toBe(3);
    expect(after.get).toBe(before.get);
    expect(after.downloads).toBe(before.downloads + 1); // pine's one image
    expect(outcomeIds(input.plan.stateDir, fixture.hash).filter((id) => id === 'pine')).toEqual(['pine']);
  });

  it("one item's failure fails the attempt only after every other item of the group is stored", async () => {
    // More items than are collected at once: the first fails while the last have not started.
    const ids = Array.from({ length: COLLECT_PARALLEL + 4 }, (_, k) => `t${k}`);
    const { clock, emulator, activities, input } = await submittedRun(
      ids.map((id) => `  - { id: ${id}, prompt: a table ${id} }`),
    );
    clock.advance(10 * 60_000);
    const failing = createActivities({
      apiBaseUrl: emulator.url,
      apiKey: KEY,
      resultStore: unavailableFor('t0'),
    });
    const first = inActivity(failing.collectResults, input);
    expect((await applicationFailure(first.result)).nonRetryable).toBe(false);
    const beat = (first.heartbeats as StoreHeartbeat[]).at(-1)!;
    expect(beat.done.map((item) => item.index).sort((a, b) => a - b)).toEqual(ids.map((_, k) => k).slice(1));
    const retry = await inActivity(activities.collectResults, input, { heartbeatDetails: beat, attempt: 2 })
      .result;
    expect(retry.items.every((item) => item.stored?.status === 'completed')).toBe(true);
  });
});
