// OpenAI in batch mode, end to end: a real Temporal dev server, pixelmill's workers in this
// process, and the OpenAI emulator over HTTP on a compressed clock. A run's shards go to the batch
// shard workflow (the provider's submission capability), each round one batch whose output file
// is streamed and its images stored and checked; what a batch does not finish goes to the next.
import './support/quiet-runtime.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWorkflowId } from '../common/names.js';
import type { RunResult } from '../common/types.js';
import {
  DEMO_OPENAI_KEY,
  startOpenAIEmulator,
  type OpenAIConfigOverrides,
  type RunningOpenAIEmulator,
} from '../emulator/openai/index.js';
import { loadManifest } from '../manifest/load.js';
import { startInProcessWorkers, startRun, startTemporalHarness } from './support/catalog-harness.js';

/** Batches of seconds: the emulator's 10-60 minutes at a thousandth. */
const TIME_SCALE = 0.001;

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
    config: { time_scale: TIME_SCALE, port: 0, ...config },
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
  extra: { api?: string; lines?: string[] } = {},
): Promise<{ result: RunResult; outputDir: string; lines: ReportLine[] }> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `api: { provider: openai, base_url: "${baseUrl}", api_key_env: OPENAI_API_KEY, mode: batch, poll_interval: 100ms${extra.api ? `, ${extra.api}` : ''} }`,
      'defaults: { size: "1:1", model: gpt-image-1.5 }',
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
  const result = await handle.result();
  const lines = readFileSync(join(catalog.outputDir, 'report.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ReportLine);
  return { result, outputDir: catalog.outputDir, lines };
}

describe('a catalog on OpenAI in batch mode', () => {
  it('stores every image from the output file, checked, one batch for the shard', async () => {
    const api = await emulator();
    const { result, lines } = await runCatalog(api.url, 'openai-batch', 12);
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
    const stats = api.stats() as unknown as Record<string, unknown>;
    expect(JSON.stringify(stats)).toContain('batches');
    // A handful of calls for the whole shard: list, upload, create, polls, collect.
    expect(result.apiCalls.submit).toBeLessThanOrEqual(3);
    expect(result.images).toBe(12);
  });
});
