// A `pixelmill worker` child process SIGKILLed while it streams a batch's output file, then
// replaced: the collect resumes at the byte offset its last heartbeat holds (a Range request), every
// item ends completed with its image on disk, no image stored before the kill is written again
// (its file is the same file), and no request is sent in a second batch.
//
// Needs the built CLI (`npm run build`): the killed worker is a real child process.
import './support/quiet-runtime.js';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiAccountId } from '../common/api-account.js';
import { runWorkflowId } from '../common/names.js';
import type { RunResult } from '../common/types.js';
import { DEMO_OPENAI_KEY, startOpenAIEmulator } from '../emulator/openai/index.js';
import { loadManifest } from '../manifest/load.js';
import { CLI } from './support/cli.js';
import { spawnWorkerProcess, startRun, startTemporalHarness } from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';

/** Enough images that a kill lands mid-stream (after the 5th is stored, before the last). */
const ITEMS = 20;

let env: TestWorkflowEnvironment;
let dir: string;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  if (!existsSync(CLI.replace(/bin\/pixelmill\.js$/, 'dist/client/main.js')))
    throw new Error('build first: npm run build');
  ({ env, dir } = await startTemporalHarness());
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** Stored images (not thumbnails) under `outputDir`, with each file's inode. */
function storedImages(outputDir: string): Map<string, number> {
  const found = new Map<string, number>();
  const walk = (at: string): void => {
    if (!existsSync(at)) return;
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.png')) found.set(path, statSync(path).ino);
    }
  };
  walk(outputDir);
  return found;
}

describe('a worker SIGKILLed while streaming an output file', () => {
  it('resumes at its byte offset: every image stored once, none lost', { timeout: 180_000 }, async () => {
    // A megabyte of padding an image: an output file of about 27 MB, streamed for a second or more;
    // a batch of 1-2 emulated minutes at a thousandth (the time goes to the heartbeat timeout
    // that tells the server the worker died, 10 s).
    const api = await startOpenAIEmulator({
      config: {
        port: 0,
        time_scale: 0.001,
        batches: { batch_duration: [60, 120] },
        images: { image_padding_bytes: 1_000_000 },
      },
      log: () => undefined,
    });
    closers.push(() => api.close());
    const name = 'openai-kill';
    const file = join(dir, `${name}.yaml`);
    writeFileSync(
      file,
      [
        `name: ${name}`,
        'api: { provider: openai, api_key_env: OPENAI_API_KEY, mode: batch, poll_interval: 100ms }',
        `output: ./${name}-out`,
        'items:',
        ...Array.from({ length: ITEMS }, (_, i) => `  - { id: item-${i}, prompt: "a durable lamp ${i}" }`),
      ].join('\n'),
    );
    const outputDir = join(dir, `${name}-out`);
    const key = { env: 'OPENAI_API_KEY', value: DEMO_OPENAI_KEY };
    let worker = spawnWorkerProcess(env.address, dir, api.url, key);
    closers.push(() => worker.kill());
    await worker.ready;
    const handle = await startRun(
      env.client,
      { file, hash: loadManifest(file).hash, outputDir, runId: runWorkflowId(name) },
      undefined,
      { apiAccount: apiAccountId(api.url, key.value) },
    );
    // Mid-stream: some images stored, not all.
    const before = await waitUntil(
      'images stored from the output file',
      () => {
        const stored = storedImages(outputDir);
        return stored.size >= 5 && stored.size < ITEMS ? stored : undefined;
      },
      120_000,
      10,
    );
    await worker.kill();
    worker = spawnWorkerProcess(env.address, dir, api.url, key);
    await worker.ready;
    const result = (await handle.result()) as RunResult;
    expect(before.size).toBeLessThan(ITEMS);
    expect(result.counts).toMatchObject({ completed: ITEMS, failed: 0, expired: 0 });
    const after = storedImages(outputDir);
    expect(after.size).toBe(ITEMS);
    // An image stored before the kill is the same file after: not written again.
    for (const [path, inode] of before) expect(after.get(path), path).toBe(inode);
    const stats = api.stats();
    expect(stats.batches_total).toBe(1);
    expect(stats.custom_ids_sent_twice).toBe(0);
    expect(stats.files.ranges_served).toBeGreaterThan(0);
    const report = readFileSync(join(outputDir, 'report.jsonl'), 'utf8').trim().split('\n');
    expect(report).toHaveLength(ITEMS);
  });
});
