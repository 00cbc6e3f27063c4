// OpenAI in batch mode, end to end: a real Temporal dev server, pixelmill's workers in this
// process, and the OpenAI emulator over HTTP on a compressed clock. A run's shards go to the batch
// shard workflow (the provider's submission capability), each round one batch whose output file
// is streamed and its images stored and checked; what a batch does not finish goes to the next.
import './support/quiet-runtime.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveProgress, type LiveProgress } from '../client/progress.js';
import type { BatchTotals } from '../common/batch-types.js';
import { runWorkflowId, shardWorkflowId } from '../common/names.js';
import type { RunResult } from '../common/types.js';
import {
  DEMO_OPENAI_KEY,
  startOpenAIEmulator,
  type OpenAIConfigOverrides,
  type RunningOpenAIEmulator,
} from '../emulator/openai/index.js';
import { loadManifest } from '../manifest/load.js';
import { startInProcessWorkers, startRun, startTemporalHarness } from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';

/**
 * Batches of a tenth of a second or so: 1-5 emulated minutes at a thousandth. The tests run side
 * by side (each its own emulator and run), so a file's time is about its slowest run's.
 */
const TIME_SCALE = 0.001;
const BATCH_DURATION: [number, number] = [60, 300];

let env: TestWorkflowEnvironment;
let dir: string;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ({ env, dir } = await startTemporalHarness());
  await startInProcessWorkers(env, { env: { OPENAI_API_KEY: DEMO_OPENAI_KEY } });
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function emulator(config: OpenAIConfigOverrides = {}): Promise<RunningOpenAIEmulator> {
  const started = await startOpenAIEmulator({
    config: {
      time_scale: TIME_SCALE,
      port: 0,
      ...config,
      batches: { batch_duration: BATCH_DURATION, ...config.batches },
    },
    log: () => undefined,
  });
  closers.push(() => started.close());
  return started;
}

export interface ReportLine {
  id: string;
  status: string;
  task_id: string | null;
  attempts: number;
  credits_cost: number;
  images: { path: string; sha256: string; width: number; height: number; checks?: { level: string }[] }[];
  error: { type: string; code: string; message: string } | null;
}

async function runCatalog(
  baseUrl: string,
  name: string,
  count: number,
  extra: {
    api?: string;
    defaults?: string;
    lines?: string[];
    /** Called with the run's id once it has started, alongside waiting for its result. */
    during?: (runId: string) => Promise<void>;
  } = {},
): Promise<{ result: RunResult; outputDir: string; lines: ReportLine[] }> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `api: { provider: openai, base_url: "${baseUrl}", api_key_env: OPENAI_API_KEY, mode: batch, poll_interval: 100ms${extra.api ? `, ${extra.api}` : ''} }`,
      `defaults: { size: "1:1", model: gpt-image-1.5${extra.defaults ? `, ${extra.defaults}` : ''} }`,
      `output: ./${name}-out`,
      ...(extra.lines ?? []),
      'items:',
      ...Array.from(
        { length: count },
        (_, i) => `  - ${JSON.stringify({ id: `item-${i}`, prompt: `a chair number ${i}` })}`,
      ),
    ].join('\n'),
  );
  const catalog = {
    file,
    hash: loadManifest(file).hash,
    outputDir: join(dir, `${name}-out`),
    runId: runWorkflowId(name),
  };
  const handle = await startRun(env.client, catalog);
  const [result] = await Promise.all([handle.result(), extra.during?.(catalog.runId)]);
  const lines = readFileSync(join(catalog.outputDir, 'report.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ReportLine);
  return { result, outputDir: catalog.outputDir, lines };
}

describe.concurrent('a catalog on OpenAI in batch mode', () => {
  it('stores every image from the output file, checked, one batch for the shard', async () => {
    // A batch of 1-5 emulated minutes, long enough to be seen in flight.
    const api = await emulator({ batches: { batch_duration: [1_000, 1_500] } });
    let seen: LiveProgress | undefined;
    const { result, lines, outputDir } = await runCatalog(api.url, 'openai-batch', 12, {
      during: async (runId) => {
        seen = await waitUntil(
          'the batch in flight in the live progress',
          async () => {
            const live = await liveProgress(env.client, runId).catch(() => undefined);
            return live?.batches?.inFlight === 1 && live.batches.nextPollAt !== undefined ? live : undefined;
          },
          60_000,
          20,
        );
      },
    });
    expect(result.counts.completed).toBe(12);
    expect(lines).toHaveLength(12);
    for (const line of lines) {
      expect(line.status).toBe('completed');
      expect(line.attempts).toBe(1);
      expect(line.images).toHaveLength(1);
      expect(line.images[0]).toMatchObject({ width: 1024, height: 1024 });
      expect(line.images[0]!.checks?.every((check) => check.level !== 'error') ?? true).toBe(true);
      expect(line.credits_cost).toBeGreaterThan(0);
    }
    expect(api.stats().batches.completed).toBe(1);
    expect(api.stats().custom_ids_sent_twice).toBe(0);
    // A handful of calls for the whole shard: list, upload, create, polls, collect.
    expect(result.apiCalls.submit).toBeLessThanOrEqual(3);
    expect(result.images).toBe(12);
    // While it ran: its batch, not an API rate (a batch run's calls skip the rate gate).
    expect(seen!.batches).toMatchObject({ inFlight: 1, enqueuedImages: 12, enqueuedLimit: 5_000 });
    const { waiting, completed, failed } = seen!.batches!.requests;
    expect(waiting + completed + failed).toBe(12);
    expect(seen!.rates).toBeUndefined();
    // At its end: summary.json, the shard's and the run's memo say the same.
    const summary = JSON.parse(readFileSync(join(outputDir, 'summary.json'), 'utf8')) as {
      batches?: BatchTotals;
      rates?: unknown;
    };
    expect(summary.batches).toMatchObject({ inFlight: 0, completed: 1, expired: 0, failed: 0 });
    expect(result.batches).toEqual(summary.batches);
    expect(summary.rates).toBeUndefined();
    const runId = runWorkflowId('openai-batch');
    const shardMemo = (await env.client.workflow.getHandle(shardWorkflowId(runId, 0)).describe()).memo;
    expect(shardMemo?.batches).toMatchObject({ inFlight: 0, completed: 1 });
    const runMemo = (await env.client.workflow.getHandle(runId).describe()).memo;
    expect(runMemo?.batches).toMatchObject({ completed: 1 });
  });

  it(
    'keeps every finished image of an expired batch and completes the rest in a second batch',
    { timeout: 120_000 },
    async () => {
      // The first batch expires once half its requests have run; the second is not picked.
      const api = await emulator({ batches: { expire_at_fraction: 0.5 } });
      // Once the first batch has expired, the next ones run to their end.
      const watch = setInterval(() => {
        if (api.stats().batches.expired > 0) {
          api.setKnobs({ batches: { expire_at_fraction: null } });
          clearInterval(watch);
        }
      }, 20);
      closers.push(async () => clearInterval(watch));
      const { result, lines } = await runCatalog(api.url, 'openai-expired', 10);
      expect(result.counts.completed).toBe(10);
      const attempts = lines.map((line) => line.attempts).sort();
      // Those of the expired batch that finished were stored from it (attempt 1); the rest at 2.
      expect(attempts.filter((a) => a === 1).length).toBeGreaterThanOrEqual(4);
      expect(attempts.filter((a) => a === 2).length).toBeGreaterThanOrEqual(1);
      for (const line of lines) expect(line.images).toHaveLength(1);
      const stats = api.stats();
      expect(stats.batches.expired).toBe(1);
      expect(stats.batches_total).toBe(2);
      // 0 items sent twice beyond the retry: the second batch held only the unfinished.
      expect(stats.batch_requests).toBe(10 + attempts.filter((a) => a === 2).length);
    },
  );

  it('fails a batch whose every request failed with its reason, never a clean completion', async () => {
    const api = await emulator({ batches: { all_requests_fail: { rate: 1, batches: [] } } });
    const { result, lines } = await runCatalog(api.url, 'openai-all-failed', 3, {
      lines: ['retry: { max_attempts: 1 }'],
    });
    expect(result.counts.completed).toBe(0);
    expect(result.counts.failed).toBe(3);
    for (const line of lines) {
      expect(line.status).toBe('failed');
      expect(line.error?.message).toBeTruthy();
    }
  });

  it("fails the items of a batch that failed validation with the batch's reason", async () => {
    const api = await emulator({ batches: { fail_validation: { rate: 1, batches: [] } } });
    const { result, lines } = await runCatalog(api.url, 'openai-invalid', 2);
    expect(result.counts.failed).toBe(2);
    expect(lines[0]!.error?.message).toMatch(/failed validation/);
  });

  it('resumes an output download cut off mid-file from its byte offset, storing each image once', async () => {
    const api = await emulator({
      faults: { cut_output_after_bytes: 40_000, cut_output_mode: 'once_per_file' },
    });
    const { result, lines } = await runCatalog(api.url, 'openai-cut', 8);
    expect(result.counts.completed).toBe(8);
    expect(new Set(lines.flatMap((line) => line.images.map((image) => image.path))).size).toBe(8);
    expect(api.stats().files.ranges_served).toBeGreaterThan(0);
  });
});

describe.concurrent('damaged output lines', () => {
  it('fails a malformed line and an undecodable image alone, each resubmitted, the neighbours kept', async () => {
    const api = await emulator({
      batches: { damaged_line_words: { malformed: ['number 2'], undecodable: ['number 4'] } },
    });
    const { result, lines } = await runCatalog(api.url, 'openai-damaged', 6);
    expect(result.counts).toMatchObject({ completed: 4, failed: 2 });
    const byId = new Map(lines.map((line) => [line.id, line]));
    expect(byId.get('item-2')).toMatchObject({ status: 'failed', error: { code: 'malformed_result_line' } });
    expect(byId.get('item-4')).toMatchObject({ status: 'failed', error: { code: 'undecodable_image' } });
    // Resubmitted by the retry policy (a new batch each time), the same damage each time.
    expect(byId.get('item-2')!.attempts).toBeGreaterThan(1);
    expect(byId.get('item-4')!.attempts).toBeGreaterThan(1);
    for (const id of ['item-0', 'item-1', 'item-3', 'item-5'])
      expect(byId.get(id)).toMatchObject({ status: 'completed', attempts: 1 });
    expect(api.stats().custom_ids_sent_twice).toBe(0);
  });
});

describe.concurrent('budget_credits', () => {
  it('sends a batch of only the items whose estimates (by quality) fit the budget, and skips the rest', async () => {
    const api = await emulator();
    // A high-quality square is $0.133, $0.0665 in Batch: three fit in $0.20 (at medium's $0.017 all would).
    const { result, lines } = await runCatalog(api.url, 'openai-budget', 8, {
      defaults: 'params: { quality: high }',
      lines: ['limits: { budget_credits: 0.20 }'],
    });
    expect(result.counts).toMatchObject({ completed: 3, skipped: 5 });
    // The batch held the three alone: the skipped were never sent.
    expect(api.stats().batch_requests).toBe(3);
    const skipped = lines.filter((line) => line.status === 'skipped');
    expect(skipped.map((line) => line.id)).toEqual(['item-3', 'item-4', 'item-5', 'item-6', 'item-7']);
    for (const line of skipped) expect(line.error?.code).toBe('budget_exhausted');
    expect(result.creditsSpent).toBeLessThanOrEqual(0.2);
  });
});

// After the others, alone: the batch must exist before the deadline comes.
describe('deadline', () => {
  it('cancels a batch at the deadline and keeps what finished', async () => {
    // A batch of 20 to 30 s of emulated time (here): the deadline comes first.
    const api = await emulator({ batches: { batch_duration: [20_000, 30_000] } });
    const { result, lines } = await runCatalog(api.url, 'openai-deadline', 4, {
      lines: ['limits: { deadline: "2500ms" }'],
    });
    expect(result.counts.completed + result.counts.cancelled).toBe(4);
    expect(result.counts.cancelled).toBeGreaterThan(0);
    const cancelled = lines.filter((line) => line.status === 'cancelled');
    for (const line of cancelled) expect(line.error?.code).toBe('deadline');
    expect(api.stats().batches.cancelled).toBe(1);
  });
});
