// The script baseline of the capacity phase: what a competent hand-written client does in one
// process, without durability. C submits in flight; the tasks the API has are looked up 500 at a
// time (the spec's limit), the longest-waiting first, every LOOKUP_INTERVAL_MS; each finished task
// gets one GET for its URLs and a streamed download of each image, C at a time. With --rps R it
// keeps to the provider's rate (baseline-api.ts). With --checks it also does pixelmill's per-image
// work on each stored file, with pixelmill's own checkStored: one decode by sharp, the thumbnail
// stored beside it, the checks against what was asked; the fair baseline for a tool that checks
// every image.
//
//   node dist/bench/script.js --url URL --items N [--concurrency 64] [--rps R] [--out DIR] [--checks] [--deadline EPOCH_MS]
//
// The API key comes from PIXELMILL_API_KEY. Prints one JSON object (BaselineFigures) on stdout.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkStored } from '../activities/image-checks.js';
import { DEFAULT_CHECK_LEVELS } from '../checks/image-checks.js';
import { LocalResultStore } from '../storage/local.js';
import { BENCH_REQUEST, emptyFigures, runBaseline, timed } from './baseline-api.js';

const LOOKUP_MAX_IDS = 500;
const LOOKUP_INTERVAL_MS = 100;
/** Batch lookup outcomes after which the task will never have images. */
const LOST = new Set(['failed', 'expired', 'not_found', 'invalid_id']);

await runBaseline('script', 64, (api, options) => {
  const figures = emptyFigures();
  mkdirSync(options.outDir, { recursive: true });
  const checked = { meta: { checks: DEFAULT_CHECK_LEVELS }, store: new LocalResultStore(options.outDir) };
  /** Checks a stored image as a worker does, its thumbnail stored beside it; counts what is flagged. */
  const check = async (name: string): Promise<void> => {
    const image = { path: name, ext: 'png', item: BENCH_REQUEST, metadata: {} };
    const { checks } = await checkStored(checked, join(options.outDir, name), image);
    if (checks) figures.images_flagged++;
    figures.images_checked++;
  };
  /** Task id to item index, in the order they are next looked up. */
  const atApi = new Map<string, number>();
  const toFetch: { taskId: string; index: number }[] = [];
  let sleepingFetchers: (() => void)[] = [];
  let next = 1;
  const done = (): boolean => figures.items_completed + figures.items_failed === options.items;
  const wakeFetchers = (): void => {
    for (const wake of sleepingFetchers) wake();
    sleepingFetchers = [];
  };

  const submitter = async (): Promise<void> => {
    while (next <= options.items) {
      const index = next++;
      atApi.set(await api.submit(index), index);
    }
  };

  const looker = async (): Promise<void> => {
    while (!done()) {
      await sleep(LOOKUP_INTERVAL_MS);
      const ids = [...atApi.keys()].slice(0, LOOKUP_MAX_IDS);
      if (ids.length === 0) continue;
      for (const { id, status } of await api.lookup(ids)) {
        const index = atApi.get(id)!;
        atApi.delete(id);
        if (status === 'completed') toFetch.push({ taskId: id, index });
        else if (LOST.has(status)) figures.items_failed++;
        else atApi.set(id, index);
      }
      wakeFetchers();
    }
  };

  const fetcher = async (): Promise<void> => {
    while (!done()) {
      const item = toFetch.shift();
      if (!item) {
        await new Promise<void>((resolve) => sleepingFetchers.push(resolve));
        continue;
      }
      const task = await api.task(item.taskId);
      if (task.status !== 'completed') {
        figures.items_failed++;
        continue;
      }
      for (const [k, url] of (task.result?.url ?? []).entries()) {
        const name = `${item.index}_${k}.png`;
        figures.bytes_stored += await api.download(url, join(options.outDir, name));
        if (options.checks) await check(name);
        figures.images++;
      }
      figures.items_completed++;
    }
    wakeFetchers();
  };

  return timed(figures, async () => {
    const lanes = Array.from({ length: options.concurrency }, () => [submitter(), fetcher()]).flat();
    await Promise.all([...lanes, looker()]);
  });
});
