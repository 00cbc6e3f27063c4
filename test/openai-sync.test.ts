// OpenAI in sync mode, end to end: each item one held call (the batch shard's held-call rounds),
// its images stored from the answer; the emulator's images-per-minute limit answers 429 with
// Retry-After, which Temporal's retries wait out; a moderated prompt fails alone, not retried.
// With no fixed rate, the run's governor learns the limit from those 429s (summary.json says so).
import './support/quiet-runtime.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWorkflowId } from '../common/names.js';
import { DEMO_OPENAI_KEY, startOpenAIEmulator } from '../emulator/openai/index.js';
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

describe('a catalog on OpenAI in sync mode', () => {
  it(
    'stores every image from its held call, through 429s, and fails a moderated prompt alone',
    { timeout: 120_000 },
    async () => {
      // Twelve images a minute (real time): the first twelve calls pass, the rest wait their turn.
      const api = await startOpenAIEmulator({
        config: { port: 0, time_scale: 0.01, limits: { images_per_minute: 12 } },
        log: () => undefined,
      });
      closers.push(() => api.close());
      const name = 'openai-sync';
      const file = join(dir, `${name}.yaml`);
      const prompts = [...Array.from({ length: 13 }, (_, i) => `a lamp number ${i}`), 'a forbidden lamp'];
      writeFileSync(
        file,
        [
          `name: ${name}`,
          `api: { provider: openai, base_url: "${api.url}", api_key_env: OPENAI_API_KEY, mode: sync }`,
          'defaults: { size: "3:2", params: { quality: low } }',
          // A fixed rate, above the limit: the calls meet it (the governor would find it instead).
          'limits: { requests_per_second: 50 }',
          `output: ./${name}-out`,
          'items:',
          ...prompts.map((prompt, i) => `  - ${JSON.stringify({ id: `item-${i}`, prompt })}`),
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
      expect(result.counts).toMatchObject({ completed: 13, failed: 1 });
      const lines = readFileSync(join(outputDir, 'report.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map(
          (line) =>
            JSON.parse(line) as {
              id: string;
              status: string;
              attempts: number;
              error: { type: string } | null;
              images: { width: number; height: number }[];
            },
        );
      const refused = lines.find((line) => line.id === 'item-13')!;
      expect(refused).toMatchObject({
        status: 'failed',
        attempts: 1,
        error: { type: 'content_policy_violation' },
      });
      for (const line of lines.filter((l) => l.status === 'completed'))
        expect(line.images[0]).toMatchObject({ width: 1536, height: 1024 });
      // The limit was met (429s), and waited out rather than failing items.
      const generations = api.stats().requests['POST /v1/images/generations'] ?? {};
      expect(generations['429'] ?? 0).toBeGreaterThan(0);
    },
  );

  it(
    "takes its turns from the run's governor, which learns the images-per-minute limit from the 429s",
    { timeout: 180_000 },
    async () => {
      // 30 images a minute: a full bucket of 30 passes at once, then one every 2 s (Retry-After).
      const api = await startOpenAIEmulator({
        config: { port: 0, time_scale: 0.01, limits: { images_per_minute: 30 } },
        log: () => undefined,
      });
      closers.push(() => api.close());
      const name = 'openai-sync-governed';
      const file = join(dir, `${name}.yaml`);
      const count = 36;
      writeFileSync(
        file,
        [
          `name: ${name}`,
          `api: { provider: openai, base_url: "${api.url}", api_key_env: OPENAI_API_KEY, mode: sync }`,
          'defaults: { size: "1:1", params: { quality: low } }',
          // No fixed rate: the governor discovers it (the default).
          'limits: { requests_per_second: auto, max_in_flight: 8 }',
          `output: ./${name}-out`,
          'items:',
          ...Array.from({ length: count }, (_, i) => `  - { id: g-${i}, prompt: "a chair number ${i}" }`),
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
      expect(result.counts).toMatchObject({ completed: count, failed: 0 });
      const generations = api.stats().requests['POST /v1/images/generations'] ?? {};
      expect(generations['429'] ?? 0).toBeGreaterThan(0);
      // The held calls told the governor their answers: the submit rate in force is the one
      // learned from the 429s (about half a call a second), not the starting rate.
      const summary = JSON.parse(readFileSync(join(outputDir, 'summary.json'), 'utf8')) as {
        rates: RunRates;
      };
      expect(summary.rates.mode).toBe('auto');
      if (summary.rates.mode !== 'auto') return;
      expect(['discovered', 'retry-after', 'floor']).toContain(summary.rates.submit.source);
      expect(summary.rates.submit.perSecond).toBeLessThan(INITIAL_PER_SECOND);
    },
  );
});
