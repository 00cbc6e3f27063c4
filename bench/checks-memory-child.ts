// The memory benchmark's worker side, a process of its own so that its RSS is the figure: it
// stores `--images` results from `--url` as a worker's transfer queue does (`--lanes` store
// activities at once, each image downloaded with the API client, streamed into a local store and
// checked from the file it wrote, with its thumbnail: the calls storeItem makes), sampling its RSS
// as it goes. Prints one JSON line: MemoryFigures (MB = 10^6 bytes).
//
//   node <worker flags> dist/bench/checks-memory-child.js --url URL --images 100 --lanes 16 --dir DIR
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createImageApiClient } from '../providers/apimart/index.js';
import { checkStored, type CheckedFields } from '../activities/image-checks.js';
import { DEFAULT_CHECK_LEVELS } from '../checks/image-checks.js';
import { LocalResultStore } from '../storage/local.js';

export interface MemoryFigures {
  images: number;
  lanes: number;
  /** RSS once everything is loaded, before the first image. */
  idle_rss_mb: number;
  /** The largest RSS sampled while the first `lanes` images were stored. */
  first_batch_peak_rss_mb: number;
  /** The kernel's high-water mark of the process's RSS (VmHWM): the true peak. */
  peak_rss_mb: number;
  seconds: number;
}

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    images: { type: 'string', default: '100' },
    lanes: { type: 'string', default: '16' },
    dir: { type: 'string' },
  },
});
const url = values.url!;
const images = Number(values.images);
const lanes = Number(values.lanes);
const store = new LocalResultStore(values.dir!);
const client = createImageApiClient({ baseUrl: url, apiKey: 'bench' });

const mb = (bytes: number): number => Math.round(bytes / 1e5) / 10;
function highWaterMb(): number {
  const line = readFileSync('/proc/self/status', 'utf8').match(/^VmHWM:\s+(\d+) kB/m);
  return line ? mb(Number(line[1]) * 1024) : Number.NaN;
}

async function storeOne(k: number): Promise<void> {
  const download = await client.download(`${url}/image/${k}.png`);
  const path = `images/${k}.png`;
  let checked: CheckedFields = {};
  await store.put(path, download.body, {}, async (file) => {
    checked = await checkStored({ meta: { checks: DEFAULT_CHECK_LEVELS }, store }, file, {
      path,
      ext: 'png',
      item: { size: '1:1', resolution: '4K' },
      metadata: {},
    });
  });
  if (checked.thumbnail === undefined || checked.checks !== undefined)
    throw new Error(`image ${k} did not pass its checks: ${JSON.stringify(checked)}`);
}

const idle = process.memoryUsage.rss();
let stored = 0;
let firstBatchPeak = idle;
const sampler = setInterval(() => {
  if (stored < lanes) firstBatchPeak = Math.max(firstBatchPeak, process.memoryUsage.rss());
}, 5);
const started = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: lanes }, async () => {
    for (let k = next++; k < images; k = next++) {
      await storeOne(k);
      stored++;
    }
  }),
);
clearInterval(sampler);
await client.close();
const figures: MemoryFigures = {
  images,
  lanes,
  idle_rss_mb: mb(idle),
  first_batch_peak_rss_mb: mb(firstBatchPeak),
  peak_rss_mb: highWaterMb(),
  seconds: Math.round((performance.now() - started) / 100) / 10,
};
process.stdout.write(`${JSON.stringify(figures)}\n`);
