// The global rate limit across a fleet: `pixelmill worker` processes on a dev server with its
// default four task-queue partitions (as a real cluster has), one run at requests_per_second 10.
// The emulator's own request log is the judge: no one-second window may hold more than the limit
// plus the documented tolerance of one call per worker.
import { beforeAll, describe, expect, it } from 'vitest';
import { apiAccountId } from '../common/api-account.js';
import type { RunResult } from '../common/types.js';
import { DEMO_API_KEY } from '../emulator/index.js';
import { apiCallTimes, busiestWindow } from '../bench/catalog-audit.js';
import {
  FAST_EMULATOR,
  spawnWorkerProcess,
  startRun,
  startTemporalHarness,
  writeCatalog,
} from './support/catalog-harness.js';
import { startTestEmulator } from './support/emulator.js';

const LIMIT = 10;

let harness: Awaited<ReturnType<typeof startTemporalHarness>>;
beforeAll(async () => {
  harness = await startTemporalHarness();
}, 60_000);

describe('requests_per_second across worker processes', () => {
  it.each([1, 3])(
    `%i worker(s) at ${LIMIT}/s: no one-second window above the limit + 1 per worker`,
    async (count) => {
      const { env, dir } = harness;
      const emulator = await startTestEmulator(FAST_EMULATOR);
      const workers = Array.from({ length: count }, () => spawnWorkerProcess(env.address, dir, emulator.url));
      await Promise.all(workers.map((worker) => worker.ready));
      const catalog = writeCatalog(dir, {
        name: `fleet-${count}`,
        baseUrl: emulator.url,
        requestsPerSecond: LIMIT,
        items: Array.from({ length: 60 }, (_, i) => ({ id: `f${i}`, prompt: `fleet product ${i}` })),
      });
      const apiAccount = apiAccountId(emulator.url, DEMO_API_KEY);
      const result = (await (
        await startRun(env.client, catalog, undefined, { apiAccount })
      ).result()) as RunResult;
      expect(result.counts).toMatchObject({ completed: 60, failed: 0 });
      await Promise.all(workers.map((worker) => worker.kill()));

      const times = await apiCallTimes(emulator);
      const seconds = (times.at(-1)! - times[0]!) / 1000;
      const busiest = busiestWindow(times);
      console.log(
        `fleet of ${count}: ${times.length} API calls in ${seconds.toFixed(1)} s ` +
          `(${(times.length / seconds).toFixed(2)}/s), busiest one-second window ${busiest}`,
      );
      expect(times.length).toBeGreaterThanOrEqual(120); // 60 submits + 60 GETs at least
      expect(busiest).toBeLessThanOrEqual(LIMIT + count);
    },
    180_000,
  );
});
