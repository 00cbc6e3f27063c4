// The embedded OpenAI run's parts, without Temporal: its emulator starts on a clock compressed
// enough for a batch of minutes to end in seconds (client/embedded.ts, emulator/providers.ts), and
// the demo manifest (manifests/providers/openai.yaml) is valid: twenty items in one batch.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EMBEDDED_TIME_SCALE, startEmbeddedEmulator } from '../client/embedded.js';
import type { StartedEmulator } from '../emulator/providers.js';
import { loadManifest } from '../manifest/load.js';
import { batchPollWaits } from '../manifest/normalize.js';

const started: StartedEmulator[] = [];
afterEach(async () => {
  for (const emulator of started.splice(0)) await emulator.close();
});

async function embedded(provider: 'openai' | 'fal'): Promise<StartedEmulator> {
  const emulator = await startEmbeddedEmulator(
    mkdtempSync(join(tmpdir(), 'pixelmill-embedded-')),
    provider,
    {},
  );
  started.push(emulator);
  return emulator;
}

describe('the embedded OpenAI emulator', () => {
  it('runs its batches of 10-60 minutes in seconds, where the others keep the default scale', async () => {
    const openai = await embedded('openai');
    const config = openai.config as { time_scale: number; batches: { batch_duration: [number, number] } };
    expect(config.time_scale).toBeLessThan(EMBEDDED_TIME_SCALE);
    // The longest batch, validation and finalizing included, well within a minute.
    expect(config.batches.batch_duration[1] * config.time_scale).toBeLessThanOrEqual(15);
    expect(new URL(openai.url).hostname).toBe('127.0.0.1');
    const fal = await embedded('fal');
    expect((fal.config as { time_scale: number }).time_scale).toBe(EMBEDDED_TIME_SCALE);
  });

  it('has a demo manifest of twenty items in batch mode, polled early', () => {
    const { settings, items } = loadManifest(
      join(import.meta.dirname, '..', 'manifests', 'providers', 'openai.yaml'),
    );
    expect(items).toHaveLength(20);
    expect(settings.provider).toBe('openai');
    expect(settings.apiMode).toBe('batch');
    // No poll_interval of its own: the default's first status call comes 2 s after the create.
    expect(settings.batchPollMs).toBeUndefined();
    expect(batchPollWaits(settings.batchPollMs).pollMs).toBe(2_000);
    expect(settings.apiBaseUrl).toBeUndefined();
  });
});
