// OpenAI in sync mode, end to end: each item one held call (the batch shard's held-call rounds),
// its images stored from the answer; the emulator's images-per-minute limit answers 429 with
// Retry-After, which Temporal's retries wait out; a moderated prompt fails alone, not retried.
// With no fixed rate, the run's governor learns the limit from those 429s (summary.json says so).
// The two runs go side by side, each against its own emulator: the file lasts about as long as
// the longer wait for the limit (real time, by design: 60 / images_per_minute seconds an image).
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
import type { RunRates } from '../governor/types.js';
import { INITIAL_PER_SECOND } from '../governor/rate-law.js';
import { loadManifest } from '../manifest/load.js';
import { startInProcessWorkers, startRun, startTemporalHarness } from './support/catalog-harness.js';

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

interface ReportLine {
  id: string;
  status: string;
  attempts: number;
  error: { type: string } | null;
  images: { width: number; height: number }[];
}

/**
 * A sync-mode run of `prompts` (ids `item-<k>`) against an emulator of its own (held calls of
 * 0.1-0.4 s, one image drawn per size), the manifest's other lines as given: its result, its
 * report lines and summary.json, and the emulator's count of answers to the Images API by status.
 */
async function syncRun(
  name: string,
  emulator: OpenAIConfigOverrides,
  prompts: readonly string[],
  lines: string[],
): Promise<{
  result: RunResult;
  report: ReportLine[];
  summary: { rates: RunRates };
  generations: Record<string, number>;
}> {
  const api: RunningOpenAIEmulator = await startOpenAIEmulator({
    config: {
      port: 0,
      time_scale: 0.01,
      ...emulator,
      images: { content: 'one_per_size', ...emulator.images },
    },
    log: () => undefined,
  });
  closers.push(() => api.close());
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `api: { provider: openai, base_url: "${api.url}", api_key_env: OPENAI_API_KEY, mode: sync }`,
      ...lines,
      `output: ./${name}-out`,
      'items:',
      ...prompts.map((prompt, k) => `  - ${JSON.stringify({ id: `item-${k}`, prompt })}`),
    ].join('\n'),
  );
  const outputDir = join(dir, `${name}-out`);
  const handle = await startRun(env.client, {
    file,
    hash: loadManifest(file).hash,
    outputDir,
    runId: runWorkflowId(name),
  });
  const result = await handle.result();
  const read = (file: string): string => readFileSync(join(outputDir, file), 'utf8');
  return {
    result,
    report: read('report.jsonl')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ReportLine),
    summary: JSON.parse(read('summary.json')) as { rates: RunRates },
    generations: api.stats().requests['POST /v1/images/generations'] ?? {},
  };
}

describe.concurrent('a catalog on OpenAI in sync mode', () => {
  it('stores every image from its held call, through 429s, and fails a moderated prompt alone', async () => {
    // Thirty images a minute (real time): the first thirty calls pass, the last three wait their
    // turn (one every 2 s). Three over the bucket: a 429 even if the calls spread over seconds.
    const prompts = [...Array.from({ length: 32 }, (_, k) => `a lamp number ${k}`), 'a forbidden lamp'];
    const { result, report, generations } = await syncRun(
      'openai-sync',
      { limits: { images_per_minute: 30 } },
      prompts,
      [
        'defaults: { size: "3:2", params: { quality: low } }',
        // A fixed rate, above the limit: the calls meet it (the governor would find it instead).
        'limits: { requests_per_second: 50 }',
      ],
    );
    expect(result.counts).toMatchObject({ completed: 32, failed: 1 });
    expect(report.find((line) => line.id === 'item-32')).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { type: 'content_policy_violation' },
    });
    for (const line of report.filter((l) => l.status === 'completed'))
      expect(line.images[0]).toMatchObject({ width: 1536, height: 1024 });
    // The limit was met (429s), and waited out rather than failing items.
    expect(generations['429'] ?? 0).toBeGreaterThan(0);
  });

  it("takes its turns from the run's governor, which learns the images-per-minute limit from the 429s", async () => {
    // 30 images a minute: a full bucket of 30 passes at the governor's starting rate (4 a second,
    // 2 more refilled meanwhile), the rest one every 2 s (Retry-After).
    const count = 36;
    const { result, summary, generations } = await syncRun(
      'openai-sync-governed',
      { limits: { images_per_minute: 30 } },
      Array.from({ length: count }, (_, k) => `a chair number ${k}`),
      [
        'defaults: { size: "1:1", params: { quality: low } }',
        // No fixed rate: the governor discovers it (the default).
        'limits: { requests_per_second: auto, max_in_flight: 8 }',
      ],
    );
    expect(result.counts).toMatchObject({ completed: count, failed: 0 });
    expect(generations['429'] ?? 0).toBeGreaterThan(0);
    // The held calls told the governor their answers: the submit rate in force is the one
    // learned from the 429s (about half a call a second), not the starting rate.
    expect(summary.rates.mode).toBe('auto');
    if (summary.rates.mode !== 'auto') return;
    expect(['discovered', 'retry-after', 'floor']).toContain(summary.rates.submit.source);
    expect(summary.rates.submit.perSecond).toBeLessThan(INITIAL_PER_SECOND);
  });
});
