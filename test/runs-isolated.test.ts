// Runs never cross (issue #11 section 1): two `pixelmill run` at the same time, in one folder and
// so on one embedded dev server, each configured for its own API (its own emulator over HTTP,
// with its own key). Each CLI's in-process workers serve only their own API account's task
// queues, so every task lands at its run's emulator, under its run's key, and the credits each
// report shows are what that emulator charged. A run whose CLI has no key is refused up front.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groundTruth } from '../bench/catalog-audit.js';
import type { RunningEmulator } from '../emulator/index.js';
import { cliSandbox, collectOutput, type CliSandbox } from './support/cli.js';
import { startTestEmulator } from './support/emulator.js';

const ITEMS = 24;

interface Side {
  name: string;
  key: string;
  emulator: RunningEmulator;
}

let sandbox: CliSandbox;
const sides: Side[] = [];

function writeManifest(name: string): void {
  const items = Array.from(
    { length: ITEMS },
    (_, i) => `  - { id: ${name}-${i}, prompt: "${name} product ${i}" }`,
  );
  writeFileSync(
    join(sandbox.dir, `${name}.yaml`),
    [
      `name: ${name}`,
      'limits: { requests_per_second: 200 }',
      `output: ./out-${name}`,
      'items:',
      ...items,
    ].join('\n'),
  );
}

beforeAll(async () => {
  sandbox = await cliSandbox();
  for (const name of ['alpha', 'beta']) {
    const key = `sk-live-${name}-key`;
    const emulator = await startTestEmulator({
      time_scale: 0.01,
      accounts: [{ id: `acct_${name}`, credits: 1_000_000, keys: [{ key }] }],
      rate_limits: { submit: { per_second: 1000, burst: 1000 }, query: { per_second: 1000, burst: 1000 } },
    });
    sides.push({ name, key, emulator });
    writeManifest(name);
  }
});
afterAll(async () => {
  await sandbox?.stop();
});

describe('two runs on one Temporal, each with its own API and key', () => {
  it('sends every call of each run to its own API with its own key, at the same time', async () => {
    const results = await Promise.all(
      sides.map(({ name, key, emulator }) =>
        collectOutput(
          sandbox.spawn(['run', `${name}.yaml`, '--no-progress'], {
            PIXELMILL_API_BASE_URL: emulator.url,
            PIXELMILL_API_KEY: key,
          }),
          180_000,
        ),
      ),
    );
    for (const result of results) expect(result.code, result.stderr).toBe(0);

    for (const { name, emulator } of sides) {
      const tasks = await groundTruth(emulator);
      // Only this run's prompts, each once, all on this emulator's one account.
      expect(tasks.map((task) => task.prompt).sort()).toEqual(
        Array.from({ length: ITEMS }, (_, i) => `${name} product ${i}`).sort(),
      );
      expect(new Set(tasks.map((task) => task.account))).toEqual(new Set([`acct_${name}`]));
      const charged = tasks.reduce((sum, task) => sum + task.credits_cost, 0);
      const summary = JSON.parse(readFileSync(join(sandbox.dir, `out-${name}`, 'summary.json'), 'utf8')) as {
        counts: Record<string, number>;
        credits_charged: number;
        emulated: boolean;
      };
      expect(summary.counts).toMatchObject({ completed: ITEMS, failed: 0 });
      expect(summary.credits_charged).toBe(charged);
      expect(summary.emulated).toBe(false);
    }
  }, 200_000);

  it('refuses a run whose CLI has no key for its API, before anything is sent', async () => {
    const [alpha] = sides;
    writeFileSync(
      join(sandbox.dir, 'keyless.yaml'),
      [
        'name: keyless',
        `api: { base_url: "${alpha!.emulator.url}" }`,
        'items:',
        '  - { prompt: a lamp }',
      ].join('\n'),
    );
    const before = (await groundTruth(alpha!.emulator)).length;
    const result = await sandbox.run(['run', 'keyless.yaml', '--no-progress'], {
      env: { PIXELMILL_API_KEY: '' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `pixelmill: no API key for ${alpha!.emulator.url}: set PIXELMILL_API_KEY`,
    );
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect((await groundTruth(alpha!.emulator)).length).toBe(before);
  });

  it('pauses a run whose key the API refuses (401): nothing fails, and run and status say why', async () => {
    const [, beta] = sides;
    writeFileSync(
      join(sandbox.dir, 'wrong-key.yaml'),
      [
        'name: wrong-key',
        'output: ./out-wrong-key',
        'items:',
        '  - { prompt: a desk }',
        '  - { prompt: a chair }',
      ].join('\n'),
    );
    const env = { PIXELMILL_API_BASE_URL: beta!.emulator.url, PIXELMILL_API_KEY: 'sk-live-not-this-one' };
    const child = sandbox.spawn(['run', 'wrong-key.yaml', '--no-progress'], env);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!/the API refused the key \(401\)/.test(stderr) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const status = await sandbox.run(['status', 'wrong-key.yaml', '--json'], { env });
    // Killed outright: after Ctrl-C its workers would wait out their 10 s shutdown grace for the
    // activities in flight, and how the CLI stops is not what this case checks.
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
    expect(stderr).toMatch(/the API refused the key \(401\)/);
    const live = JSON.parse(status.stdout) as { state: string; reason: string; counts: { failed: number } };
    expect(live).toMatchObject({ state: 'paused', counts: { failed: 0 } });
    expect(live.reason).toMatch(/^the API refused the key \(401\): .*`pixelmill resume`/);
    // The key itself is never shown.
    expect(stderr + status.stdout).not.toContain('sk-live-not-this-one');
  }, 120_000);

  it('refuses to attach to a running run from a command set up for another API, then resumes with its own', async () => {
    const [alpha] = sides;
    const key = 'sk-live-gamma-key';
    // Tasks of 2 to 3 s: the run is still at the API when its CLI dies, a moment after it
    // started. Once it is dead no worker serves the run, so it stays running however long the
    // refused commands below take; longer tasks only made the resumed run wait for them.
    const gamma = await startTestEmulator({
      time_scale: 0.05,
      accounts: [{ id: 'acct_gamma', credits: 1_000_000, keys: [{ key }] }],
    });
    writeManifest('gamma');
    const own = { PIXELMILL_API_BASE_URL: gamma.url, PIXELMILL_API_KEY: key };
    const first = sandbox.spawn(['run', 'gamma.yaml', '--no-progress'], own);
    let stderr = '';
    first.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    while (!/started run pixelmill\/gamma/.test(stderr))
      await new Promise((resolve) => setTimeout(resolve, 100));
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('close', resolve));

    // Three commands set up for something else, at the same time (each only reads the run).
    const [otherApi, emulated, sameUrlOtherKey] = await Promise.all([
      sandbox.run(['run', 'gamma.yaml', '--no-progress'], {
        env: { PIXELMILL_API_BASE_URL: alpha!.emulator.url, PIXELMILL_API_KEY: alpha!.key },
      }),
      sandbox.run(['run', 'gamma.yaml', '--no-progress'], { env: { PIXELMILL_API_KEY: '' } }),
      sandbox.run(['run', 'gamma.yaml', '--no-progress'], {
        env: { PIXELMILL_API_BASE_URL: gamma.url, PIXELMILL_API_KEY: 'sk-live-another-key' },
      }),
    ]);
    expect(otherApi.code).toBe(1);
    expect(otherApi.stderr).toMatch(
      new RegExp(
        `pixelmill/gamma runs against ${gamma.url} \\(account a[0-9a-f]{16}\\), but this command is set up for ${alpha!.emulator.url}`,
      ),
    );
    expect(emulated.code).toBe(1);
    expect(emulated.stderr).toMatch(/but this command is set up for the built-in emulator/);
    expect(sameUrlOtherKey.code).toBe(1);
    for (const refused of [otherApi, emulated, sameUrlOtherKey]) {
      expect(refused.stderr).not.toContain(key);
      expect(refused.stderr).not.toContain(alpha!.key);
    }

    const resumed = await sandbox.run(['run', 'gamma.yaml', '--no-progress'], {
      env: own,
      timeoutMs: 180_000,
    });
    expect(resumed.stderr).toMatch(/attached to the running run pixelmill\/gamma/);
    expect(resumed.code, resumed.stderr).toBe(0);
    // Nothing of this run went to the other API.
    expect((await groundTruth(alpha!.emulator)).filter((task) => task.prompt.startsWith('gamma'))).toEqual(
      [],
    );
  }, 240_000);

  it('shows what Temporal is retrying when the API cannot be reached, and counts nothing as submitted', async () => {
    const gone = await startTestEmulator({});
    const url = gone.url;
    await gone.close(); // nothing listens there now: every call is refused
    writeFileSync(
      join(sandbox.dir, 'unreachable.yaml'),
      [
        'name: unreachable',
        'output: ./out-unreachable',
        'items:',
        '  - { prompt: a vase }',
        '  - { prompt: a bowl }',
      ].join('\n'),
    );
    const env = { PIXELMILL_API_BASE_URL: url, PIXELMILL_API_KEY: 'sk-live-unreachable' };
    const child = sandbox.spawn(['run', 'unreachable.yaml', '--no-progress'], env);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!/\[retrying: /.test(stderr) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 200));
    const status = await sandbox.run(['status', 'unreachable.yaml', '--json'], { env });
    child.kill('SIGKILL'); // as above: not a wait for the workers' shutdown grace
    await new Promise((resolve) => child.once('close', resolve));

    expect(stderr).toMatch(
      /\[retrying: POST \/v1\/images\/generations failed: network error ECONNREFUSED.* \(submitItem, attempt \d+/,
    );
    const live = JSON.parse(status.stdout) as {
      retrying: { activity: string; message: string; attempt: number };
      counts: { submitted: number; failed: number; queued: number };
    };
    expect(live.retrying).toMatchObject({
      activity: 'submitItem',
      message: expect.stringMatching(/ECONNREFUSED/),
    });
    expect(live.retrying.attempt).toBeGreaterThanOrEqual(2);
    // Nothing the API never accepted counts as submitted, and an outage fails nothing.
    expect(live.counts).toMatchObject({ submitted: 0, failed: 0, queued: 2 });
  }, 120_000);
});
