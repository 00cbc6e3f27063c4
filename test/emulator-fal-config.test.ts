// The fal emulator's config: defaults (the demo key, concurrency 2, fal's documented retention
// and webhook retries), overrides merged over them, YAML files with every problem at
// file:line:col, keys never echoed, and a start that fails with a typed error.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  DEFAULT_FAL_CONFIG,
  DEMO_FAL_KEY,
  loadFalConfig,
  parseFalConfig,
  startFalEmulator,
} from '../emulator/fal/index.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';
import { startFal } from './emulator-fal-harness.js';

afterAll(removeTempDirs);

function problemsOf(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (error) {
    return (error as { problems: readonly string[] }).problems;
  }
  throw new Error('expected the config to be refused');
}

describe('defaults', () => {
  it('states fal documented numbers: concurrency 2, 1 h or 6 min results, 10 retries over about 2 hours', () => {
    expect(DEMO_FAL_KEY).toBe('DEMO_FAL_KEY');
    expect(DEFAULT_FAL_CONFIG.accounts[0]!.keys[0]!.key).toBe(DEMO_FAL_KEY);
    expect(DEFAULT_FAL_CONFIG.concurrency).toBe(2);
    expect(DEFAULT_FAL_CONFIG.retention).toMatchObject({
      result_seconds: 3600,
      large_result_seconds: 360,
      large_result_bytes: 10_240,
    });
    const delays = DEFAULT_FAL_CONFIG.webhooks.retry_delays_seconds;
    expect(delays).toHaveLength(10);
    const total = delays.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(1.9 * 3600);
    expect(total).toBeLessThan(2.1 * 3600);
    expect(() => (DEFAULT_FAL_CONFIG as { concurrency: number }).concurrency++).toThrow();
  });

  it('is exactly what docs/emulators/fal.md says the defaults are', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'emulators', 'fal.md'), 'utf8');
    const block = /## Configuration[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(parse(block ?? '')).toEqual(DEFAULT_FAL_CONFIG);
  });

  it('merges overrides over the defaults, keeping the default models beside added ones', () => {
    const config = parseFalConfig({
      concurrency: 40,
      models: { 'me/my-app': { ...DEFAULT_FAL_CONFIG.default_model, max_images: 1 } },
    });
    expect(config.concurrency).toBe(40);
    expect(Object.keys(config.models)).toEqual([
      'fal-ai/flux/dev',
      'fal-ai/flux/schnell',
      'fal-ai/flux-pro/v1.1',
      'me/my-app',
    ]);
  });

  it('serves a model added in the config and refuses one it does not know unless told to accept any', async () => {
    const strict = await startFal();
    const open = await startFal({ accept_unknown_models: true });
    const post = (url: string) =>
      fetch(`${url}/someone/app/v2`, {
        method: 'POST',
        headers: { authorization: `Key ${DEMO_FAL_KEY}` },
        body: '{"prompt":"x"}',
      });
    expect((await post(strict.url)).status).toBe(404);
    const accepted = await post(open.url);
    expect(accepted.status).toBe(200);
    expect(((await accepted.json()) as { status_url: string }).status_url).toContain(
      '/someone/app/requests/',
    );
  });
});

describe('problems', () => {
  it('lists every problem of an object config, naming no key', () => {
    const problems = problemsOf(() =>
      parseFalConfig({
        concurrency: 0,
        models: { 'no-slash': DEFAULT_FAL_CONFIG.default_model },
        accounts: [
          { id: 'a', keys: [{ key: 'secret-1' }] },
          { id: 'a', keys: [{ key: 'secret-1' }] },
        ],
        webhooks: { signing_keys: ['short'] },
      }),
    );
    expect(problems).toEqual([
      'accounts[1].id: duplicate account id "a"',
      'accounts[1].keys[0].key: duplicate API key (already used above)',
      'concurrency: Too small: expected number to be >=1',
      'models.no-slash: expected owner/app or owner/app/path',
      'webhooks.signing_keys[0]: expected a base64url 32-byte seed',
    ]);
    expect(problems.join('\n')).not.toContain('secret-1');
  });

  it('reads a YAML file and places each problem at file:line:col, hiding a key pasted as a field name', () => {
    const file = join(tempDir(), 'fal.yaml');
    writeFileSync(
      file,
      [
        'port: 0',
        'time_scale: -1',
        'retention:',
        '  result_secs: 10',
        'accounts:',
        '  - id: me',
        '    fal-secret-key: 1',
        '    keys: []',
        '',
      ].join('\n'),
    );
    const problems = problemsOf(() => loadFalConfig(file));
    expect(problems).toEqual([
      `${file}:2:13 time_scale: Too small: expected number to be >0`,
      `${file}:4:3 retention.result_secs: unknown key`,
      `${file}:7:5 accounts[0]: unknown key (its name is not shown: it may be a secret)`,
    ]);
    writeFileSync(file, 'concurrency: 40\nfaults:\n  stuck_request_rate: 0.5\n');
    expect(loadFalConfig(file)).toMatchObject({ concurrency: 40, faults: { stuck_request_rate: 0.5 } });
    expect(() => loadFalConfig(join(tempDir(), 'missing.yaml'))).toThrow(/no such file/);
  });

  it('fails to start with a typed error when the port is taken', async () => {
    const running = await startFal();
    await expect(
      startFalEmulator({ config: { host: '127.0.0.1', port: Number(new URL(running.url).port) } }),
    ).rejects.toMatchObject({
      name: 'ProviderEmulatorListenError',
      code: 'emulator_listen_failed',
    });
  });
});
