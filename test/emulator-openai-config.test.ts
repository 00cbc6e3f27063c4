// Operating the OpenAI emulator: the YAML config with every problem at file:line:col, knobs changed
// on a running emulator (PUT /_emulator/config and setKnobs), the state_file journal across a
// restart (files, batches, cancels and knobs all still known, output files byte-identical), and the
// seed making two runs the same.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { waitUntil } from './support/wait.js';
import {
  api,
  download,
  fixed,
  getBatch,
  jsonl,
  linesOf,
  ManualClock,
  startBatch,
  startTestOpenAI,
  upload,
} from './emulator-openai-harness.js';
import {
  DEFAULT_OPENAI_CONFIG,
  loadOpenAIConfig,
  parseOpenAIConfig,
  parseOpenAIConfigText,
} from '../emulator/openai/index.js';
import { emulatorOf, isEmulatedProvider } from '../emulator/providers.js';
import { parseBflConfigText } from '../emulator/bfl/config.js';
import { configLoaders } from '../emulator/core/config.js';
import { parseReplicateConfigText } from '../emulator/replicate/config.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'pixelmill-openai-'));
}

describe('config', () => {
  it('reads a YAML file over the defaults', () => {
    const file = join(tempDir(), 'openai.yaml');
    writeFileSync(
      file,
      'port: 0\nbatches:\n  expire_at_fraction: 0.6\nimages:\n  image_padding_bytes: 1000\n',
    );
    const config = loadOpenAIConfig(file);
    expect(config.batches.expire_at_fraction).toBe(0.6);
    expect(config.images.image_padding_bytes).toBe(1000);
    expect(config.limits).toEqual(DEFAULT_OPENAI_CONFIG.limits);
  });

  it('reports every problem at file:line:col, unknown keys included, never naming a key under accounts', () => {
    const text = [
      'port: 0',
      'batches:',
      '  expire_at_fraction: 2',
      '  batch_duraton: [1, 2]',
      'faults:',
      '  cut_output_mode: sometimes',
      'accounts:',
      '  - id: org-x',
      '    sk-pasted-secret: 1',
    ].join('\n');
    let problems: readonly string[] = [];
    try {
      parseOpenAIConfigText(text, 'openai.yaml');
    } catch (error) {
      expect((error as { code: string }).code).toBe('openai_emulator_config_invalid');
      problems = (error as { problems: readonly string[] }).problems;
    }
    expect(problems).toHaveLength(4);
    expect(problems[0]).toMatch(/^openai\.yaml:3:23 batches\.expire_at_fraction: /);
    expect(problems[1]).toBe('openai.yaml:4:3 batches.batch_duraton: unknown key');
    expect(problems[2]).toMatch(/^openai\.yaml:6:20 faults\.cut_output_mode: /);
    expect(problems[3]).toMatch(/^openai\.yaml:9:5 accounts\[0\]: unknown key \(its name is not shown/);
    expect(problems.join('\n')).not.toContain('sk-pasted-secret');
  });

  it('is reachable through emulator/providers.ts like the other emulators', () => {
    expect(isEmulatedProvider('openai')).toBe(true);
    const entry = emulatorOf('openai');
    expect(entry.demoKey).toBe('sk-openai-demo-key');
    expect(() => parseOpenAIConfig({ limits: { images_per_minute: 0 } })).toThrow(
      /invalid openai emulator config/,
    );
  });
});

describe("core's config loaders (emulator/core/config.ts)", () => {
  it('read the OpenAI, BFL and Replicate configs alike: one UserError, each problem at file:line:col', () => {
    const text = 'port: 0\nnot_a_knob: 1\n';
    const cases = [
      ['openai', parseOpenAIConfigText],
      ['bfl', parseBflConfigText],
      ['replicate', parseReplicateConfigText],
    ] as const;
    for (const [provider, parse] of cases) {
      expect(() => parse(text, 'x.yaml')).toThrow(
        expect.objectContaining({
          code: `${provider}_emulator_config_invalid`,
          problems: ['x.yaml:2:1 not_a_knob: unknown key'],
        }),
      );
    }
    const spec = {
      provider: 'toy',
      defaults: { port: 1 },
      schema: z.strictObject({ port: z.number().int() }) as z.ZodType<{ port: number }, unknown>,
    };
    const toy = configLoaders(spec);
    expect(toy.parse({ port: 2 })).toEqual({ port: 2 });
    expect(toy.parseText('', 'toy.yaml')).toEqual({ port: 1 });
    expect(() => toy.load(join(tempDir(), 'missing.yaml'))).toThrow(
      expect.objectContaining({ code: 'toy_emulator_config_unreadable' }),
    );
  });
});

describe('started as pixelmill does (emulator/providers.ts, the system clock)', () => {
  it('runs a batch to completion in compressed real time and serves its output', async () => {
    const running = await emulatorOf('openai').start({
      config: { host: '127.0.0.1', port: 0, time_scale: 0.001, batches: { batch_duration: [100, 100] } },
    });
    onTestFinished(() => running.close());
    const created = await startBatch(running, jsonl(3));
    const batch = await waitUntil(
      'the batch to complete',
      async () => {
        const now = await getBatch(running, created.id);
        return now.status === 'completed' ? now : undefined;
      },
      10_000,
      20,
    );
    expect(linesOf((await download(running, batch.output_file_id)).body)).toHaveLength(3);
  });
});

describe('knobs on a running emulator', () => {
  it('PUT /_emulator/config changes knobs for batches created afterwards; an invalid change changes nothing', async () => {
    const clock = new ManualClock();
    const emulator = await startTestOpenAI(fixed(), { clock });
    const before = await startBatch(emulator, jsonl(4));
    const put = await api(emulator, '/_emulator/config', {
      method: 'PUT',
      key: null,
      body: { batches: { all_requests_fail: { rate: 1, batches: [] } } },
    });
    expect(put.status).toBe(200);
    expect(put.json.batches.all_requests_fail.rate).toBe(1);
    const after = await startBatch(emulator, jsonl(4));
    clock.advance(200_000);
    expect((await getBatch(emulator, before.id)).request_counts.failed).toBe(0);
    expect((await getBatch(emulator, after.id)).request_counts.failed).toBe(4);

    const invalid = await api(emulator, '/_emulator/config', {
      method: 'PUT',
      key: null,
      body: { port: 1, faults: { create_429_rate: 3 } },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error.message).toMatch(/port: unknown key/);
    expect(invalid.json.error.message).toMatch(/faults\.create_429_rate/);
    expect(emulator.knobs().faults.create_429_rate).toBe(0);
    expect(() => emulator.setKnobs({ images: { image_padding_bytes: -1 } })).toThrow(
      /invalid OpenAI emulator knobs/,
    );
  });
});

describe('state_file', () => {
  it('a restarted emulator still knows its files, batches, cancels and knobs, and serves the same bytes', async () => {
    const stateFile = join(tempDir(), 'state.jsonl');
    const clock = new ManualClock();
    const config = fixed({ state_file: stateFile, images: { content: 'one_per_size' } });
    const first = await startTestOpenAI(config, { clock });
    const kept = await startBatch(first, jsonl(6));
    const cancelled = await startBatch(first, jsonl(6, {}, 'c'));
    const spare = (await upload(first, jsonl(1))).json.id as string;
    first.setKnobs({ batches: { request_failure_rate: 1 } });
    const failing = await startBatch(first, jsonl(2, {}, 'f'));
    clock.advance(60_000);
    await api(first, `/v1/batches/${cancelled.id}/cancel`, { method: 'POST' });
    clock.advance(200_000);
    const bytes = (await download(first, (await getBatch(first, kept.id)).output_file_id)).body;
    const states = await Promise.all([kept, cancelled, failing].map((b) => getBatch(first, b.id)));
    await first.close();

    const second = await startTestOpenAI(config, { clock });
    for (const state of states) expect(await getBatch(second, state.id)).toEqual(state);
    expect(states.map((s) => s.status)).toEqual(['completed', 'cancelled', 'completed']);
    expect(states[2]!.request_counts.failed).toBe(2);
    expect((await download(second, states[0]!.output_file_id)).body.equals(bytes)).toBe(true);
    expect((await api(second, `/v1/files/${spare}`)).status).toBe(200);
    expect(second.knobs().batches.request_failure_rate).toBe(1);
    // Ids made after the restart do not repeat those made before it.
    const earlierFiles = [spare, ...states.map((s) => s.input_file_id as string)];
    expect(earlierFiles).not.toContain((await upload(second, jsonl(1))).json.id);
    const fresh = await startBatch(second, jsonl(1));
    expect(states.map((s) => s.id)).not.toContain(fresh.id);
  });
});

describe('seed', () => {
  it('makes two emulators with the same seed answer the same ids, timings and output bytes', async () => {
    const run = async () => {
      const clock = new ManualClock();
      const emulator = await startTestOpenAI(
        fixed({ seed: 7, batches: { batch_duration: [50, 150] }, images: { content: 'one_per_size' } }),
        { clock },
      );
      const created = await startBatch(emulator, jsonl(5));
      clock.advance(200_000);
      const batch = await getBatch(emulator, created.id);
      return { batch, bytes: (await download(emulator, batch.output_file_id)).body };
    };
    const [a, b] = [await run(), await run()];
    expect(a.batch).toEqual(b.batch);
    expect(a.bytes.equals(b.bytes)).toBe(true);
  });
});
