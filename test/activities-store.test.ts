// storeResults against the real emulator's result host: images land at the path template with the
// sha256 of the bytes served, are not downloaded again when already stored, resume after a retry
// from the heartbeat, and expired or truncated downloads end the way the workflow expects.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import type { StoreResultsInput } from '../common/types.js';
import { apiCallCounts } from '../bench/catalog-audit.js';
import { ManualClock, startTestEmulator } from './support/emulator.js';
import {
  applicationFailure,
  completedTasks,
  inActivity,
  servedImage,
  storesRefusing,
  writeManifest,
} from './activities-fixture.js';
import { frozenPlan } from './support/plan.js';
import type { StoreHeartbeat } from '../activities/store-results.js';
import { StorageAccessDeniedError } from '../storage/errors.js';
import type { ResultStore } from '../storage/result-store.js';

const KEY = 'sk-live-store-key';
const accounts = [{ id: 'acct_store', keys: [{ key: KEY }] }];
const RESULT_ROUTE = 'GET /results/{task_id}/{index}.png';

/** A prepared two-item run whose tasks have completed; returns the store requests for both. */
async function completedRun(
  config: Parameters<typeof startTestEmulator>[0] = {},
  pathTemplate = '{name}/{resolution}/{id}-{size}-{index}.{ext}',
) {
  const clock = new ManualClock();
  const emulator = await startTestEmulator({ accounts, ...config }, { clock });
  const fixture = writeManifest([
    'name: chairs',
    `output: { dir: ./out, path_template: "${pathTemplate}" }`,
    'items:',
    '  - { id: oak, prompt: an oak chair, n: 2, size: "16:9" }',
    '  - { id: pine, prompt: a pine chair }',
  ]);
  const activities = createActivities({ apiBaseUrl: emulator.url, apiKey: KEY });
  const { plan } = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });
  const requests = await completedTasks(activities, plan, clock, [0, 1]);
  const input: StoreResultsInput = { plan, shard: 0, items: requests };
  return { clock, emulator, fixture, activities, plan, input };
}

function outcomeLines(stateDir: string, hash: string): Record<string, unknown>[] {
  const file = join(stateDir, `outcomes-${hash.slice(0, 16)}`, 'shard-0001.jsonl');
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** A local store whose credentials are revoked once it has written `images` images. */
function revokedAfter(images: number): (outputDir: string) => ResultStore {
  let puts = 0;
  return storesRefusing((path, outputDir) =>
    // Thumbnails are written beside each image: the images are what is counted.
    !path.startsWith('.thumbnails/') && ++puts > images
      ? new StorageAccessDeniedError(`${outputDir}: access denied`)
      : undefined,
  );
}

describe('storeResults', () => {
  it('stores every image at its path with the sha256 of the bytes served', async () => {
    const { emulator, fixture, activities, input } = await completedRun();
    const run = inActivity(activities.storeResults, input);
    expect(await run.result).toEqual({
      items: [
        { index: 0, status: 'completed', images: 2 },
        { index: 1, status: 'completed', images: 1 },
      ],
    });
    const lines = outcomeLines(input.plan.stateDir, fixture.hash);
    expect(lines).toHaveLength(2);
    const [oak] = lines;
    expect(Object.keys(oak!)).toEqual([
      'index',
      'id',
      'status',
      'task_id',
      'attempts',
      'credits_cost',
      'images',
      'error',
    ]);
    expect(oak).toMatchObject({
      index: 0,
      id: 'oak',
      status: 'completed',
      task_id: input.items[0]!.taskId,
      credits_cost: 2,
      error: null,
    });
    const images = oak!.images as { path: string; sha256: string; bytes: number; source_url: string }[];
    expect(images.map((image) => image.path)).toEqual([
      'chairs/1K/oak-16x9-0.png',
      'chairs/1K/oak-16x9-1.png',
    ]);
    for (const [i, image] of images.entries()) {
      expect(image.source_url).toBe(input.items[0]!.urls[i]);
      const served = await servedImage(image.source_url);
      expect({ sha256: image.sha256, bytes: image.bytes }).toEqual(served);
      const onDisk = readFileSync(join(fixture.outputDir, image.path));
      expect(onDisk.length).toBe(served.bytes);
    }
    expect(images[0]!.sha256).not.toBe(images[1]!.sha256);
    expect(apiCallCounts(emulator.stats()).downloads).toBe(3 + 2); // the activity's three, plus the test's own two
  });

  it('does not download an image again while the stored file still has its sha256', async () => {
    const { emulator, fixture, activities, input } = await completedRun();
    await inActivity(activities.storeResults, input).result;
    const afterFirst = apiCallCounts(emulator.stats()).downloads;

    // A new activity (no heartbeat to resume from): everything is already stored.
    expect(await inActivity(activities.storeResults, input).result).toMatchObject({
      items: [
        { status: 'completed', images: 2 },
        { status: 'completed', images: 1 },
      ],
    });
    expect(apiCallCounts(emulator.stats()).downloads).toBe(afterFirst);

    // A damaged file is downloaded again and repaired.
    const pine = join(fixture.outputDir, 'chairs/1K/pine-1x1-0.png');
    const good = readFileSync(pine);
    writeFileSync(pine, Buffer.concat([good.subarray(0, 100), Buffer.from('not the image')]));
    await inActivity(activities.storeResults, input).result;
    expect(apiCallCounts(emulator.stats()).downloads).toBe(afterFirst + 1);
    expect(readFileSync(pine).equals(good)).toBe(true);
  });

  it('on a retry, skips the items its previous attempt heartbeated as done, and records them with its own', async () => {
    const { emulator, fixture, activities, input } = await completedRun();
    // The first attempt stores oak's two images, then fails: its last beat says what it did.
    const failing = createActivities({ apiBaseUrl: emulator.url, apiKey: KEY, resultStore: revokedAfter(2) });
    const first = inActivity(failing.storeResults, input);
    await applicationFailure(first.result);
    const previous = (first.heartbeats as StoreHeartbeat[]).at(-1)!;
    expect(previous.done).toEqual([{ index: 0, status: 'completed', images: 2 }]);
    expect(previous.lines?.map((line) => line.id)).toEqual(['oak']);
    const downloadsBefore = apiCallCounts(emulator.stats()).downloads;
    const run = inActivity(activities.storeResults, input, { heartbeatDetails: previous, attempt: 2 });
    expect(await run.result).toEqual({
      items: [
        { index: 0, status: 'completed', images: 2 },
        { index: 1, status: 'completed', images: 1 },
      ],
    });
    expect(apiCallCounts(emulator.stats()).downloads).toBe(downloadsBefore + 1);
    // The first attempt's own append, then the retry's: oak again (from the heartbeat) and pine.
    expect(outcomeLines(input.plan.stateDir, fixture.hash).map((line) => line.id)).toEqual([
      'oak',
      'oak',
      'pine',
    ]);
  });

  it('marks an item whose result URL expired; an image stored earlier stays completed', async () => {
    const { clock, emulator, fixture, activities, input } = await completedRun({ result_ttl_seconds: 3600 });
    await inActivity(activities.storeResults, { ...input, items: [input.items[1]!] }).result;
    clock.advance(24 * 3600_000);
    const result = await inActivity(activities.storeResults, input).result;
    const expired = {
      type: 'ResultExpired',
      code: 'result_expired',
      message: 'result URL expired before it was stored',
    };
    expect(result.items).toEqual([
      { index: 0, status: 'expired', images: 0, error: expired },
      { index: 1, status: 'completed', images: 1 },
    ]);
    expect(emulator.stats().requests[RESULT_ROUTE]).toEqual({ '200': 1, '404': 1 });
    expect(outcomeLines(input.plan.stateDir, fixture.hash).at(-2)).toMatchObject({
      id: 'oak',
      status: 'expired',
      images: [],
      error: expired,
    });
  });

  it('throws a retryable failure on a truncated download and leaves no partial file', async () => {
    const { fixture, activities, input } = await completedRun({ faults: { truncate_download_rate: 1 } });
    const failure = await applicationFailure(inActivity(activities.storeResults, input).result);
    expect(failure.type).toBe('ResultDownloadError');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.details?.[0]).toMatchObject({ code: 'api_result_truncated' });
    const dir = join(fixture.outputDir, 'chairs', '1K');
    expect(readdirSync(dir)).toEqual([]);
    expect(() => outcomeLines(input.plan.stateDir, fixture.hash)).toThrow(/ENOENT/);
  });

  it('records what it stored before a failure the batch does not retry', async () => {
    const { emulator, fixture, input } = await completedRun();
    // A store whose credentials are revoked after the first item's images.
    const worker = createActivities({ apiBaseUrl: emulator.url, apiKey: KEY, resultStore: revokedAfter(2) });
    const failure = await applicationFailure(inActivity(worker.storeResults, input).result);
    expect(failure.type).toBe('StorageAccessDeniedError');
    expect(failure.nonRetryable).toBe(true);
    const lines = outcomeLines(input.plan.stateDir, fixture.hash);
    expect(lines.map((line) => [line.id, line.status, (line.images as unknown[]).length])).toEqual([
      ['oak', 'completed', 2],
    ]);
  });

  it("removes what a killed worker's write left: on the item's retry, and at the run's end", async () => {
    const { fixture, activities, input } = await completedRun();
    const dir = join(fixture.outputDir, 'chairs', '1K');
    mkdirSync(dir, { recursive: true });
    // As a SIGKILL mid-download leaves them: the temp file of a write that never finished.
    const oakPartial = join(dir, '.oak-16x9-0.png.0123456789ab.tmp');
    const pinePartial = join(dir, '.pine-1x1-0.png.ba9876543210.tmp');
    const notOurs = join(dir, '.notes.tmp');
    for (const file of [oakPartial, pinePartial, notOurs]) writeFileSync(file, 'half an image');

    // The retry of the oak item removes its own partial write, and only that.
    const retry = { ...input, items: [input.items[0]!] };
    await inActivity(activities.storeResults, retry, { attempt: 2 }).result;
    expect(readdirSync(dir).sort()).toEqual(
      ['.notes.tmp', '.pine-1x1-0.png.ba9876543210.tmp', 'oak-16x9-0.png', 'oak-16x9-1.png'].sort(),
    );

    // The run's end (its report) removes the rest of what was cut off.
    await activities.writeReport({
      plan: input.plan,
      runId: 'run-partials',
      emulated: true,
      startedAt: new Date().toISOString(),
      apiCalls: { submit: 2, lookup: 0, get: 2 },
    });
    expect(existsSync(pinePartial)).toBe(false);
    expect(existsSync(notOurs)).toBe(true);
  });

  it("fails only the item whose path the file system refuses; the batch's other items are stored", async () => {
    const { fixture, activities, input } = await completedRun({}, '{size}/{id}_{index}.{ext}');
    // A file where the oak's folder must be: no retry can write there.
    mkdirSync(fixture.outputDir, { recursive: true });
    writeFileSync(join(fixture.outputDir, '16x9'), 'not a folder');
    const result = await inActivity(activities.storeResults, input).result;
    expect(result.items).toEqual([
      {
        index: 0,
        status: 'failed',
        images: 0,
        error: {
          type: 'StoragePathError',
          code: 'storage_path_invalid',
          message: expect.stringMatching(
            /^cannot write 16x9\/oak_0\.png: a file stands where a folder must be/,
          ),
        },
      },
      { index: 1, status: 'completed', images: 1 },
    ]);
    expect(existsSync(join(fixture.outputDir, '1x1', 'pine_0.png'))).toBe(true);
  });
});
