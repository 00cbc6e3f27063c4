// Issue #3 section 6: a 1,000-item catalog run end to end on a real Temporal dev server and the
// emulator over HTTP, with `pixelmill worker` processes SIGKILLed twice mid-run and replaced. The
// run must finish with every image stored and matching what the result host serves, and with
// prompts resubmitted only for requests in flight when a worker died.
//
// Needs the built CLI (`npm run build`): the workers and the starter are real child processes.
// Each SIGKILL strands the activities the dead worker had started until they miss their 10 s
// heartbeat timeout (workflows/activities.ts): until then the slots they hold wait.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SHARD_SIZE } from '../common/names.js';
import { DEMO_API_KEY } from '../emulator/index.js';
import type { RunResult } from '../common/types.js';
import { CLI } from './support/cli.js';
import {
  downloadsServed,
  groundTruth,
  mapLimit,
  readReport,
  readSummary,
  runHistories,
  servedSha256,
  sha256,
  submissionsByPrompt,
} from '../bench/catalog-audit.js';
import {
  spawnWorkerProcess,
  startCatalogHarness,
  writeCatalog,
  type CatalogHarness,
  type CatalogItem,
  type WorkerProcess,
} from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';

const ITEMS = 1_000;
/** Temporal's own warning threshold; pixelmill keeps every history well below it. */
const HISTORY_EVENT_LIMIT = 10_240;
const SIZES = ['1:1', '16:9', '2:3', '4:5'];

let harness: CatalogHarness;
beforeAll(async () => {
  if (!existsSync(CLI.replace(/bin\/pixelmill\.js$/, 'dist/client/main.js')))
    throw new Error('build first: npm run build');
  harness = await startCatalogHarness();
});

function catalogItems(): CatalogItem[] {
  return Array.from({ length: ITEMS }, (_, i) => ({
    id: `sku-${String(i).padStart(4, '0')}`,
    prompt: `catalog photo of product ${i}, studio light`,
    n: (i % 2) + 1,
    size: SIZES[i % SIZES.length]!,
  }));
}

/** `pixelmill run FILE` against the cluster: starts the run and returns (external mode). */
function startWithCli(file: string, address: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, 'run', file, '--no-progress'], {
    cwd: harness.dir,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: 'default',
      PIXELMILL_API_BASE_URL: '',
      PIXELMILL_API_KEY: DEMO_API_KEY,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('a 1,000-item catalog survives SIGKILLed workers', () => {
  it('stores every image exactly as served, with duplicates bounded by what was in flight', async () => {
    const { env, emulator, dir } = harness;
    const items = catalogItems();
    const totalImages = items.reduce((sum, item) => sum + (item.n ?? 1), 0);
    const catalog = writeCatalog(dir, {
      name: 'durability',
      items,
      baseUrl: emulator.url,
      requestsPerSecond: 400,
    });

    let worker: WorkerProcess = spawnWorkerProcess(env.address, dir, emulator.url);
    await worker.ready;
    const started = Date.now();
    const cli = await startWithCli(catalog.file, env.address);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stderr).toMatch(/started run pixelmill\/durability/);

    const kills: { atImages: number; afterMs: number }[] = [];
    for (const share of [0.2, 0.6]) {
      await waitUntil(
        `${share * 100}% of the images downloaded`,
        () => downloadsServed(emulator) >= share * totalImages,
      );
      kills.push({ atImages: downloadsServed(emulator), afterMs: Date.now() - started });
      await worker.kill();
      worker = spawnWorkerProcess(env.address, dir, emulator.url);
      await worker.ready;
    }

    const handle = env.client.workflow.getHandle(catalog.runId);
    const result = (await handle.result()) as RunResult;
    console.log(`durability: run took ${Date.now() - started} ms; kills at`, kills);
    expect(result.counts.completed).toBe(ITEMS);

    // Every item completed, with all its images, each file matching its report entry.
    const report = readReport(catalog);
    expect(report.map((line) => line.id)).toEqual(items.map((item) => item.id));
    const notCompleted = report.filter((line) => line.status !== 'completed');
    expect(notCompleted, JSON.stringify(notCompleted.slice(0, 3))).toEqual([]);
    report.forEach((line, i) => expect(line.images, line.id).toHaveLength(items[i]!.n ?? 1));
    const images = report.flatMap((line) => line.images);
    expect(new Set(images.map((image) => image.path)).size).toBe(totalImages);
    for (const image of images) {
      const bytes = readFileSync(join(catalog.outputDir, image.path));
      expect(bytes.length, image.path).toBe(image.bytes);
      expect(sha256(bytes), image.path).toBe(image.sha256);
    }
    // ... and matching what the result host serves for its source URL, downloaded again now.
    const served = await mapLimit(images, 16, (image) => servedSha256(image.source_url));
    const mismatched = images.filter((image, k) => served[k] !== image.sha256);
    expect(mismatched.map((image) => image.path)).toEqual([]);

    const summary = readSummary(catalog);
    expect(summary).toMatchObject({
      manifest: 'durability',
      run_id: catalog.runId,
      items: ITEMS,
      counts: { completed: ITEMS, failed: 0, cancelled: 0, expired: 0, skipped: 0 },
      images: totalImages,
      emulated: false,
    });
    expect(summary.credits_charged).toBe(report.reduce((sum, line) => sum + line.credits_cost, 0));

    // Ground truth: every prompt reached the API; resubmissions only for what was in flight.
    const tasks = await groundTruth(emulator);
    const byPrompt = submissionsByPrompt(tasks);
    for (const item of items) expect(byPrompt.get(item.prompt) ?? 0, item.prompt).toBeGreaterThanOrEqual(1);
    const extra = [...byPrompt.values()].reduce((sum, count) => sum + count - 1, 0);
    console.log(`durability: ${tasks.length} tasks for ${ITEMS} prompts (${extra} extra submissions)`);
    expect(extra).toBeLessThanOrEqual(kills.length * 100);
    // The report's task ids are tasks the emulator knows, for the item's own prompt.
    const taskById = new Map(tasks.map((task) => [task.id, task]));
    report.forEach((line, i) => {
      const task = taskById.get(line.task_id ?? '');
      expect(task?.prompt, line.id).toBe(items[i]!.prompt);
      expect(task?.status, line.id).toBe('completed');
    });

    // No history comes near Temporal's limit, across every continue-as-new.
    const histories = await runHistories(env.client, catalog.runId, Math.ceil(ITEMS / SHARD_SIZE));
    const lengths = histories.map((record) => record.history.events?.length ?? 0);
    console.log('durability: history lengths', lengths);
    for (const length of lengths) expect(length).toBeLessThan(HISTORY_EVENT_LIMIT);

    await worker.kill();
  }, 240_000);
});
