// OpenAI in sync mode, end to end: each item one held call (the batch shard's held-call rounds),
// its images stored from the answer; the emulator's images-per-minute limit answers 429 with
// Retry-After, which Temporal's retries wait out; a moderated prompt fails alone, not retried.
import './support/quiet-runtime.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWorkflowId } from '../common/names.js';
import { DEMO_OPENAI_KEY, startOpenAIEmulator } from '../emulator/openai/index.js';
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
});
