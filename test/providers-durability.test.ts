// Issue 39's durability on each provider, end to end: a real Temporal dev server and the provider's
// emulator over HTTP on a compressed clock.
// - A `pixelmill worker` child process SIGKILLed mid-run and replaced (fal, Replicate, BFL): every
//   item completed with its images on disk, few prompts submitted twice, nothing lost to retention.
// - The retention race (BFL's sample URL, Replicate's deletion, both shrunk): a result deleted
//   before it was stored makes its item `expired`, resubmitted by the default retry policy, never
//   reported completed; a retention no attempt can beat ends each item `expired` after
//   retry.max_attempts, one a slow download beats only sometimes ends every item completed.
//
// Needs the built CLI (`npm run build`): the killed workers are real child processes. The race runs
// on workers in this process.
import './support/quiet-runtime.js';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it, type ExpectStatic } from 'vitest';
import { COLLECT_PARALLEL } from '../activities/collect-results.js';
import { readReport } from '../bench/catalog-audit.js';
import { apiAccountId } from '../common/api-account.js';
import { runWorkflowId } from '../common/names.js';
import type { RunResult } from '../common/types.js';
import { DEMO_BFL_KEY, startBflEmulator, type GroundTruthTask } from '../emulator/bfl/index.js';
import { DEMO_FAL_KEY, startFalEmulator } from '../emulator/fal/index.js';
import {
  DEMO_REPLICATE_TOKEN,
  startReplicateEmulator,
  type GroundTruthPrediction,
} from '../emulator/replicate/index.js';
import { loadManifest } from '../manifest/load.js';
import { DEFAULTS } from '../manifest/normalize.js';
import { CLI } from './support/cli.js';
import {
  spawnWorkerProcess,
  startInProcessWorkers,
  startRun,
  startTemporalHarness,
  type Catalog,
} from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';

type Provider = 'fal' | 'replicate' | 'bfl';

const KEY_ENV: Record<Provider, string> = {
  fal: 'FAL_KEY',
  replicate: 'REPLICATE_API_TOKEN',
  bfl: 'BFL_API_KEY',
};
const DEMO_KEY: Record<Provider, string> = {
  fal: DEMO_FAL_KEY,
  replicate: DEMO_REPLICATE_TOKEN,
  bfl: DEMO_BFL_KEY,
};

let env: TestWorkflowEnvironment;
let dir: string;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  if (!existsSync(CLI.replace(/bin\/pixelmill\.js$/, 'dist/client/main.js')))
    throw new Error('build first: npm run build');
  ({ env, dir } = await startTemporalHarness());
  // The race's runs start without an API account: these workers serve them, each run's key from
  // the variable its manifest names. The killed workers serve their own account's queues.
  await startInProcessWorkers(env, {
    env: Object.fromEntries(
      Object.entries(KEY_ENV).map(([provider, name]) => [name, DEMO_KEY[provider as Provider]]),
    ),
  });
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** One task the emulator accepted, as its ground truth tells it. */
interface TaskTruth {
  id: string;
  prompt: string;
  /** Its result was fetched (fal) or its images downloaded whole (Replicate, BFL). */
  fetched: boolean;
}

/** A provider's emulator, read the same way whichever it is. */
interface Emulated {
  provider: Provider;
  url: string;
  /** Every task it accepted (its admin endpoint's NDJSON). */
  tasks(): Promise<TaskTruth[]>;
  /** Images downloaded whole so far. */
  downloads(): number;
  /** Results deleted (or their URLs expired) before anyone fetched them. */
  lostToRetention(): number;
}

async function ndjson<T>(url: string): Promise<T[]> {
  const text = await (await fetch(url)).text();
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as T);
}

async function emulator(provider: Provider, config: Record<string, unknown>): Promise<Emulated> {
  const options = { config: { port: 0, ...config } as never };
  if (provider === 'fal') {
    const fal = await startFalEmulator(options);
    closers.push(() => fal.close());
    return {
      provider,
      url: fal.url,
      tasks: async () =>
        (
          await ndjson<{ request_id: string; prompt: string; result_fetched_at_ms: number | null }>(
            `${fal.url}/_emulator/requests`,
          )
        ).map((task) => ({
          id: task.request_id,
          prompt: task.prompt,
          fetched: task.result_fetched_at_ms !== null,
        })),
      downloads: () => fal.stats().retention.images_downloaded,
      lostToRetention: () => {
        const { retention } = fal.stats();
        return retention.results_deleted_unfetched + retention.images_deleted_undownloaded;
      },
    };
  }
  if (provider === 'replicate') {
    const replicate = await startReplicateEmulator(options);
    closers.push(() => replicate.close());
    return {
      provider,
      url: replicate.url,
      tasks: async () =>
        (await ndjson<GroundTruthPrediction>(`${replicate.url}/_emulator/predictions`)).map((task) => ({
          id: task.id,
          prompt: task.prompt,
          fetched: task.downloaded > 0,
        })),
      downloads: () => replicate.stats().outputs.downloaded,
      lostToRetention: () => replicate.stats().outputs.deleted_before_download,
    };
  }
  const bfl = await startBflEmulator(options);
  closers.push(() => bfl.close());
  return {
    provider,
    url: bfl.url,
    tasks: async () =>
      (await ndjson<GroundTruthTask>(`${bfl.url}/_emulator/tasks`)).map((task) => ({
        id: task.id,
        prompt: task.prompt,
        fetched: task.sample_fetched_at_ms !== null,
      })),
    downloads: () => bfl.stats().samples.downloads,
    lostToRetention: () => bfl.stats().samples.expired_before_download,
  };
}

/** `<dir>/<name>.yaml`: one item per prompt on `api`'s provider, output under `<dir>/<name>-out`. */
function writeCatalog(
  api: Emulated,
  name: string,
  prompts: readonly string[],
  extra: string[] = [],
): Catalog {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `api: { provider: ${api.provider}, base_url: "${api.url}", api_key_env: ${KEY_ENV[api.provider]} }`,
      `output: ./${name}-out`,
      ...extra,
      'items:',
      ...prompts.map((prompt, i) => `  - ${JSON.stringify({ id: `item-${i}`, prompt })}`),
    ].join('\n'),
  );
  return {
    file,
    hash: loadManifest(file).hash,
    outputDir: join(dir, `${name}-out`),
    runId: runWorkflowId(name),
  };
}

const promptsOf = (count: number, word: string) => Array.from({ length: count }, (_, i) => `${word} ${i}`);

/** How many tasks the emulator accepted per prompt. */
function countByPrompt(tasks: readonly TaskTruth[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const task of tasks) counts.set(task.prompt, (counts.get(task.prompt) ?? 0) + 1);
  return counts;
}

/** Every image a completed report line names is on disk, as long and with the digest it recorded. */
function expectImagesOnDisk(
  expect: ExpectStatic,
  catalog: Catalog,
  lines: ReturnType<typeof readReport>,
): void {
  for (const line of lines) {
    expect(line.images.length, line.id).toBeGreaterThan(0);
    for (const image of line.images) {
      const path = join(catalog.outputDir, image.path);
      expect(existsSync(path), image.path).toBe(true);
      const bytes = readFileSync(path);
      expect(bytes.length, image.path).toBe(image.bytes);
      expect(createHash('sha256').update(bytes).digest('hex'), image.path).toBe(image.sha256);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// A worker killed mid-run.

const KILL_ITEMS = 24;
const MAX_IN_FLIGHT = 8;
/**
 * Clocks compressed, with every retention still well above the 10 to 20 s a kill strands a
 * finished task for (the dead worker's activities are noticed at their 10 s heartbeat timeout,
 * then retried): fal's results 72 s, Replicate's files 72 s, BFL's sample URLs 60 s.
 */
const KILL_EMULATOR: Record<Provider, Record<string, unknown>> = {
  fal: { time_scale: 0.02, concurrency: MAX_IN_FLIGHT },
  replicate: { time_scale: 0.02 },
  bfl: { time_scale: 0.1 },
};

// The three providers' runs at once (their own emulators, workers and account queues): most of
// each run is the wait for the dead worker's heartbeats to time out.
describe('a worker SIGKILLed mid-run, then replaced', () => {
  it.concurrent.for<Provider>(['fal', 'replicate', 'bfl'])(
    'on %s: every item completed with its images on disk, at most one duplicate submit, nothing lost to retention',
    { timeout: 90_000 },
    async (provider, { expect }) => {
      const api = await emulator(provider, KILL_EMULATOR[provider]);
      const prompts = promptsOf(KILL_ITEMS, `${provider} durable product`);
      const catalog = writeCatalog(api, `${provider}-kill`, prompts, [
        `limits: { max_in_flight: ${MAX_IN_FLIGHT} }`,
      ]);
      const key = { env: KEY_ENV[provider], value: DEMO_KEY[provider] };
      let worker = spawnWorkerProcess(env.address, dir, api.url, key);
      await worker.ready;
      const handle = await startRun(env.client, catalog, undefined, {
        apiAccount: apiAccountId(api.url, key.value),
      });

      // Mid-run: some images stored, and tasks at the provider whose images are not.
      const atKill = await waitUntil(
        'images stored and tasks at the provider',
        async () => {
          const downloads = api.downloads();
          const tasks = (await api.tasks()).length;
          return downloads >= KILL_ITEMS / 4 && tasks > downloads ? { downloads, tasks } : undefined;
        },
        60_000,
        20,
      );
      await worker.kill();
      const kills = 1;
      worker = spawnWorkerProcess(env.address, dir, api.url, key);
      await worker.ready;
      const result = (await handle.result()) as RunResult;
      await worker.kill();
      expect(atKill.downloads).toBeLessThan(KILL_ITEMS);
      expect(result.counts).toMatchObject({ completed: KILL_ITEMS, failed: 0, expired: 0 });
      const report = readReport(catalog);
      expect(report.map((line) => line.id)).toEqual(prompts.map((_, i) => `item-${i}`));
      expect(report.filter((line) => line.status !== 'completed')).toEqual([]);
      expectImagesOnDisk(expect, catalog, report);

      const tasks = await api.tasks();
      const byPrompt = countByPrompt(tasks);
      for (const prompt of prompts) expect(byPrompt.get(prompt) ?? 0, prompt).toBeGreaterThanOrEqual(1);
      // At most one duplicate a kill: a submit the provider answered is journaled at once, and the
      // retried activity takes that task over instead of submitting again; none of these providers
      // takes an Idempotency-Key, so only a submit on the wire when the worker died (sent, its
      // answer not yet journaled) is sent twice, and a worker has at most one such submit per
      // account at a time (activities/unconfirmed-submits.ts).
      const duplicates = [...byPrompt.values()].reduce((sum, count) => sum + count - 1, 0);
      console.log(
        `${provider} kill: at ${atKill.downloads} images downloaded and ${atKill.tasks} tasks; ` +
          `${tasks.length} tasks in all for ${KILL_ITEMS} prompts`,
      );
      expect(duplicates).toBeLessThanOrEqual(kills);
      // Each report line names a task the provider made for its own prompt, and whose result was fetched.
      const byId = new Map(tasks.map((task) => [task.id, task]));
      report.forEach((line, i) => {
        expect(byId.get(line.task_id ?? '')?.prompt, line.id).toBe(prompts[i]);
        expect(byId.get(line.task_id ?? '')?.fetched, line.id).toBe(true);
      });
      expect(api.lostToRetention()).toBe(0);
    },
  );
});

// ---------------------------------------------------------------------------------------------
// The retention race.

type RaceProvider = 'bfl' | 'replicate';

/**
 * Results gone before anyone can fetch them: BFL's sample URL valid 0.02 ms, so its download is
 * refused (result_expired); Replicate's prediction removed as it ends, so the sweep finds it
 * without output (task_expired).
 */
const NO_WIN: Record<RaceProvider, { config: Record<string, unknown>; code: string }> = {
  bfl: { config: { time_scale: 0.02, sample: { url_ttl_seconds: 0.001 } }, code: 'result_expired' },
  replicate: { config: { time_scale: 0.02, retention: { seconds: 0.001 } }, code: 'task_expired' },
};

/**
 * A slow link (each image 3 to 4 s to download) and results that live 5.5 to 6 s after they are
 * ready. The first round's results are seen together (one list sweep, or one due group of checks,
 * about a second after they were ready) and collected in one batch, whose downloads run
 * COLLECT_PARALLEL at a time: its first two waves start within about 5 s and win, its third starts
 * more than 6 s after and loses. The items resubmitted are fewer: their one wave wins.
 */
const SOMETIMES: Record<RaceProvider, Record<string, unknown>> = {
  // BFL's JPEGs here are 39.5 to 42.5 KB, Replicate's WebPs 12.5 to 16 KB.
  bfl: { time_scale: 0.02, sample: { url_ttl_seconds: 275 }, faults: { slow_download_kbps: 105 } },
  replicate: { time_scale: 0.02, retention: { seconds: 290 }, faults: { slow_download_kbps: 33 } },
};

describe.each<RaceProvider>(['bfl', 'replicate'])('the retention race on %s', (provider) => {
  it('a retention no attempt can win: each item ends expired after retry.max_attempts submits, never completed', async () => {
    const items = 4;
    const api = await emulator(provider, NO_WIN[provider].config);
    const prompts = promptsOf(items, `${provider} fleeting product`);
    const catalog = writeCatalog(api, `${provider}-no-win`, prompts);
    const result = (await (await startRun(env.client, catalog)).result()) as RunResult;

    expect(result.counts).toMatchObject({ completed: 0, failed: 0, expired: items });
    const report = readReport(catalog);
    for (const line of report) {
      expect(line.status, line.id).toBe('expired');
      // The default policy names both expiries: submitted again until its attempts ran out.
      expect(line.attempts, line.id).toBe(DEFAULTS.retryMaxAttempts);
      expect(line.error?.code, line.id).toBe(NO_WIN[provider].code);
      expect(line.images).toEqual([]);
    }
    // At the provider: every attempt a task of its own, none of whose results anyone got.
    const tasks = await api.tasks();
    const byPrompt = countByPrompt(tasks);
    for (const prompt of prompts) expect(byPrompt.get(prompt), prompt).toBe(DEFAULTS.retryMaxAttempts);
    expect(tasks.filter((task) => task.fetched)).toEqual([]);
    expect(api.lostToRetention()).toBe(items * DEFAULTS.retryMaxAttempts);
  }, 60_000);

  it('a retention a slow download loses only sometimes: every item completed, those that lost on a later attempt', async () => {
    const items = 3 * COLLECT_PARALLEL;
    const api = await emulator(provider, SOMETIMES[provider]);
    const prompts = promptsOf(items, `${provider} racing product`);
    // A fixed rate well above the run's needs: the first round is submitted at once.
    const catalog = writeCatalog(api, `${provider}-sometimes`, prompts, [
      'limits: { requests_per_second: 200 }',
    ]);
    const result = (await (await startRun(env.client, catalog)).result()) as RunResult;
    const report = readReport(catalog);
    console.log(`${provider} sometimes: attempts`, report.map((line) => line.attempts).join(' '));

    expect(result.counts).toMatchObject({ completed: items, failed: 0, expired: 0 });
    expect(report.filter((line) => line.status !== 'completed')).toEqual([]);
    expectImagesOnDisk(expect, catalog, report);
    const resubmitted = report.filter((line) => line.attempts > 1);
    expect(resubmitted.length).toBeGreaterThan(0);
    // Each attempt was one task at the provider; every attempt but the reported one lost its
    // result to retention, and the reported one's images were downloaded.
    const tasks = await api.tasks();
    report.forEach((line, i) => {
      const own = tasks.filter((task) => task.prompt === prompts[i]);
      expect(own.length, line.id).toBe(line.attempts);
      expect(
        own.filter((task) => task.fetched).map((task) => task.id),
        line.id,
      ).toEqual([line.task_id]);
    });
    const lost = report.reduce((sum, line) => sum + line.attempts - 1, 0);
    expect(api.lostToRetention()).toBe(lost);
  }, 90_000);
});
