// The emulator config: defaults, the issue's documented example file, and errors that list every
// problem (syntax and schema) with file:line:col in one UserError.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../common/errors.js';
import {
  DEFAULT_EMULATOR_CONFIG,
  loadEmulatorConfig,
  parseEmulatorConfig,
  startEmulator,
} from '../emulator/index.js';

const dir = mkdtempSync(join(tmpdir(), 'pixelmill-emulator-config-'));
function writeConfig(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function userError(fn: () => unknown): UserError {
  try {
    fn();
  } catch (error) {
    if (error instanceof UserError) return error;
    throw error;
  }
  throw new Error('expected a UserError');
}

/** The config block of the issue, verbatim: every value in it is the documented default. */
const ISSUE_EXAMPLE = `host: 127.0.0.1
port: 8787
time_scale: 1.0        # multiplies every duration
seed: 1
result_base_url: null
max_n: 4
sizes: ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "9:21", "21:9", "1:2", "2:1"]
accounts:
  - id: acct_demo
    credits: 1000000
    webhook_secret: whsec_demo
    keys:
      - { key: sk-live-demo, status: active }   # active | disabled | expired
rate_limits:
  submit: { per_second: 10, burst: 20 }
  query:  { per_second: 50, burst: 100 }
generation:
  queue_seconds: [1, 5]
  seconds: { 1K: [40, 55], 2K: [50, 75], 4K: [70, 130] }
  failure_rate: 0.0
  blocked_words: [forbidden]
  credits_per_image: { 1K: 1, 2K: 2, 4K: 4 }
result_ttl_seconds: 86400
faults:
  server_error_rate: 0.0
  truncate_download_rate: 0.0
  slow_download_kbps: 0
  webhook_duplicate_rate: 0.0
`;

describe('emulator config', () => {
  it('reads the documented example as exactly the defaults', () => {
    expect(loadEmulatorConfig(writeConfig('example.yaml', ISSUE_EXAMPLE))).toEqual(DEFAULT_EMULATOR_CONFIG);
  });

  it('treats an empty file and an empty object as the defaults', () => {
    expect(loadEmulatorConfig(writeConfig('empty.yaml', ''))).toEqual(DEFAULT_EMULATOR_CONFIG);
    expect(parseEmulatorConfig({})).toEqual(DEFAULT_EMULATOR_CONFIG);
  });

  it('merges a partial file over the defaults and fills account defaults', () => {
    const config = loadEmulatorConfig(
      writeConfig(
        'partial.yaml',
        'time_scale: 0.01\nrate_limits:\n  submit: { per_second: 2 }\ngeneration:\n  queue_seconds: 3\naccounts:\n  - id: a\n    keys: [{ key: k1 }]\n',
      ),
    );
    expect(config.time_scale).toBe(0.01);
    expect(config.rate_limits.submit).toEqual({ per_second: 2, burst: 20 });
    expect(config.rate_limits.query).toEqual(DEFAULT_EMULATOR_CONFIG.rate_limits.query);
    expect(config.generation.queue_seconds).toEqual([3, 3]);
    expect(config.accounts).toEqual([
      { id: 'a', credits: 1_000_000, webhook_secret: '', keys: [{ key: 'k1', status: 'active' }] },
    ]);
  });

  it('reports a syntax error, a wrong type and an unknown key at once, each with line:col', () => {
    const file = writeConfig(
      'broken.yaml',
      'port: "eighty"\nseed: 1\nfaults:\n  server_eror_rate: 0.5\nsizes: [1:1, \n',
    );
    const error = userError(() => loadEmulatorConfig(file));
    expect(error.code).toBe('emulator_config_invalid');
    expect(error.message).toContain(file);
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^${file}:1:7 port: .*number`)),
        expect.stringMatching(new RegExp(`^${file}:4:3 faults\\.server_eror_rate: unknown key$`)),
        expect.stringMatching(new RegExp(`^${file}:[56]:\\d+ Flow sequence`)),
      ]),
    );
    // Sorted by position, one line each.
    const lines = error.problems.map((p) => Number(/:(\d+):\d+ /.exec(p)?.[1]));
    expect(lines).toEqual([...lines].sort((a, b) => a - b));
    for (const problem of error.problems) expect(problem).not.toContain('\n');
  });

  it('points at nested values, list items and ranges', () => {
    const file = writeConfig(
      'nested.yaml',
      [
        'accounts:',
        '  - id: a',
        '    keys:',
        '      - { key: k1, status: revoked }',
        '  - id: a',
        '    credits: -5',
        '    keys: [{ key: k1 }]',
        'generation:',
        '  seconds: { 1K: [9, 2] }',
        '  failure_rate: 2',
        'result_base_url: ftp://example.test',
        '',
      ].join('\n'),
    );
    const problems = userError(() => loadEmulatorConfig(file)).problems;
    expect(problems).toEqual([
      expect.stringMatching(/:4:28 accounts\[0\]\.keys\[0\]\.status: .*active/),
      expect.stringMatching(/:5:9 accounts\[1\]\.id: duplicate account id "a"/),
      expect.stringMatching(/:6:14 accounts\[1\]\.credits: /),
      expect.stringMatching(/:7:19 accounts\[1\]\.keys\[0\]\.key: duplicate API key/),
      expect.stringMatching(/:9:18 generation\.seconds\.1K: .*min/),
      expect.stringMatching(/:10:17 generation\.failure_rate: /),
      expect.stringMatching(/:11:18 result_base_url: expected an http\(s\) URL/),
    ]);
    // A duplicate key is named by position, never by value.
    expect(problems.join('\n')).not.toContain('k1');
  });

  it('rejects a file whose root is not a mapping, and a missing file, as UserErrors', () => {
    expect(userError(() => loadEmulatorConfig(writeConfig('list.yaml', '- 1\n- 2\n'))).problems).toEqual([
      expect.stringMatching(/:1:1 \(root\): expected a mapping/),
    ]);
    expect(userError(() => loadEmulatorConfig(join(dir, 'absent.yaml'))).code).toBe(
      'emulator_config_unreadable',
    );
  });

  it('validates config objects with paths but no positions', () => {
    const error = userError(() =>
      parseEmulatorConfig({ max_n: 0, bogus: true, faults: { slow_download_kbps: 'fast' } }),
    );
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^max_n: /),
        'bogus: unknown key',
        expect.stringMatching(/^faults\.slow_download_kbps: /),
      ]),
    );
    expect(error.problems).toHaveLength(3);
  });

  it('refuses to start with an invalid config override', async () => {
    await expect(startEmulator({ config: { port: 0, time_scale: -1 } })).rejects.toMatchObject({
      code: 'emulator_config_invalid',
    });
  });

  it('keeps the documented defaults in docs/emulator.md in step with the code', () => {
    const docs = readFileSync(new URL('../docs/emulator.md', import.meta.url), 'utf8');
    const block = /```yaml\n([\s\S]*?)```/.exec(docs)?.[1] ?? '';
    expect(loadEmulatorConfig(writeConfig('docs.yaml', block))).toEqual(DEFAULT_EMULATOR_CONFIG);
  });
});

describe('listening', () => {
  it('reports a port in use as a UserError and serves on the port 0 resolved', async () => {
    const first = await startEmulator({ config: { port: 0 } });
    try {
      expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(first.resultBaseUrl).toBe(`${first.url}/results`);
      const port = Number(new URL(first.url).port);
      expect(port).toBeGreaterThan(0);
      await expect(startEmulator({ config: { port } })).rejects.toMatchObject({
        code: 'emulator_listen_failed',
        name: 'EmulatorListenError',
      });
    } finally {
      await first.close();
      await first.close();
    }
  });
});
