// The Replicate emulator's config: defaults, strict schema, YAML with every problem reported as
// `file:line:col path: message`, duplicates, and secrets (tokens, webhook secrets) never quoted.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  DEFAULT_REPLICATE_CONFIG,
  DEMO_REPLICATE_TOKEN,
  loadReplicateConfig,
  parseReplicateConfig,
  parseReplicateConfigText,
} from '../emulator/replicate/index.js';
import { UserError } from '../common/errors.js';

function problemsOf(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UserError);
    return (error as UserError).problems;
  }
  throw new Error('expected the config to be refused');
}

describe('config', () => {
  it('has the documented defaults', () => {
    const config = parseReplicateConfig({});
    expect(config).toEqual(DEFAULT_REPLICATE_CONFIG);
    expect(config).toMatchObject({
      time_scale: 1,
      seed: 1,
      state_file: null,
      retention: { seconds: 3600, from: 'completed' },
      list: { page_size: 100, include_output: true, include_logs: false },
      limits: {
        create: { requests: 600, window_seconds: 60 },
        other: { requests: 3000, window_seconds: 60 },
      },
      generation: { run_timeout_seconds: 1800 },
    });
    expect(config.accounts[0]!.tokens).toEqual([DEMO_REPLICATE_TOKEN]);
    expect(config.models.map((m) => m.name)).toEqual([
      'black-forest-labs/flux-schnell',
      'black-forest-labs/flux-1.1-pro',
      'stability-ai/sdxl',
    ]);
  });

  it('merges overrides deeply, takes a number for a range, and trims base URLs', () => {
    const config = parseReplicateConfig({
      generation: { run_seconds: 7 },
      base_url: 'https://api.example.com/',
      faults: { server_error_rate: { get: 0.5 } },
    });
    expect(config.generation.run_seconds).toEqual([7, 7]);
    expect(config.generation.queue_seconds).toEqual([0.5, 3]);
    expect(config.base_url).toBe('https://api.example.com');
    expect(config.faults.server_error_rate).toMatchObject({ get: 0.5, create: 0 });
  });

  it('reports every problem of a YAML file at its line and column, naming no secret', () => {
    const dir = mkdtempSync(join(tmpdir(), 'replicate-config-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'replicate.yaml');
    writeFileSync(
      file,
      [
        'time_scale: 0',
        'accounts:',
        '  - username: a',
        '    tokens: [r8_same]',
        '    webhook_secret: not-a-secret',
        '    credit_usd: 5',
        '    r8_pasted_here: 1',
        '  - username: a',
        '    tokens: [r8_same]',
        '    webhook_secret: whsec_YQ==',
        '    credit_usd: 5',
        'limits:',
        '  create: { requests: 600, window_secs: 60, burst: 600 }',
        'retention: { seconds: 3600, from: finished }',
        '',
      ].join('\n'),
    );
    const problems = problemsOf(() => loadReplicateConfig(file));
    expect(problems).toEqual([
      `${file}:1:13 time_scale: Too small: expected number to be >0`,
      expect.stringMatching(new RegExp(`^${file}:5:21 accounts\\[0\\]\\.webhook_secret: expected "whsec_"`)),
      `${file}:7:5 accounts[0]: unknown key (its name is not shown: it may be a secret)`,
      `${file}:8:15 accounts[1].username: duplicate username`,
      `${file}:9:14 accounts[1].tokens[0]: duplicate token (already used above)`,
      // window_seconds is still the default's: overrides merge over the defaults.
      `${file}:13:28 limits.create.window_secs: unknown key`,
      `${file}:14:35 retention.from: Invalid option: expected one of "completed"|"created"`,
    ]);
    for (const problem of problems) {
      expect(problem).not.toContain('r8_same');
      expect(problem).not.toContain('r8_pasted_here');
      expect(problem).not.toContain('not-a-secret');
    }
  });

  it('refuses a model with a version id that is not 64 hex, duplicate versions, and a syntax error', () => {
    const model = DEFAULT_REPLICATE_CONFIG.models[2]!;
    const problems = problemsOf(() =>
      parseReplicateConfig({
        models: [
          { ...model, versions: ['abc'] },
          { ...model, name: 'x/y' },
          { ...model, name: 'x/z' },
        ],
      }),
    );
    expect(problems).toEqual([
      'models[2].versions[0]: duplicate version id',
      'models[2].versions[1]: duplicate version id',
      'models[0].versions[0]: expected a 64-character lowercase hex version id',
    ]);
    expect(problemsOf(() => parseReplicateConfigText('seed: [1\n', 'c.yaml'))[0]).toMatch(
      /^c\.yaml:\d+:\d+ /,
    );
  });
});
