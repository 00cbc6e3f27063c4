// The naive baseline: what a careful script without an orchestrator does. A fixed number of
// workers each take the next prompt, submit it (waiting out Retry-After on a 429), poll the task
// with GET using the spec's exponential backoff (1 s, doubling, at most 8 s; real seconds even
// though the emulator's generation time is compressed), and download every result to disk.
// With --rps R it is told the provider's rate and keeps to it (baseline-api.ts).
//
//   node dist/bench/naive.js --url URL --items N [--concurrency 8] [--rps R] [--out DIR] [--deadline EPOCH_MS]
//
// The API key comes from PIXELMILL_API_KEY. Prints one JSON object (BaselineFigures) on stdout.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { emptyFigures, runBaseline, timed, type BaselineApi, type TaskView } from './baseline-api.js';

const NAIVE_BACKOFF = { firstMs: 1_000, factor: 2, maxMs: 8_000 };

async function waitForTask(api: BaselineApi, taskId: string): Promise<TaskView> {
  let delay = NAIVE_BACKOFF.firstMs;
  for (;;) {
    await sleep(delay);
    const task = await api.task(taskId);
    if (task.status === 'completed' || task.status === 'failed') return task;
    delay = Math.min(NAIVE_BACKOFF.maxMs, delay * NAIVE_BACKOFF.factor);
  }
}

await runBaseline('naive', 8, (api, options) => {
  const figures = emptyFigures();
  mkdirSync(options.outDir, { recursive: true });
  let next = 1;
  const worker = async (): Promise<void> => {
    while (next <= options.items) {
      const index = next++;
      const task = await waitForTask(api, await api.submit(index));
      if (task.status !== 'completed') {
        figures.items_failed++;
        continue;
      }
      for (const [k, url] of (task.result?.url ?? []).entries()) {
        figures.bytes_stored += await api.download(url, join(options.outDir, `${index}_${k}.png`));
        figures.images++;
      }
      figures.items_completed++;
    }
  };
  return timed(figures, () =>
    Promise.all(Array.from({ length: options.concurrency }, worker)).then(() => {}),
  );
});
