// Issue #12 section 4, control that works, through the built CLI in one sandbox (embedded dev
// server, in-process workers, the built-in emulator): a request no worker is there to take (it
// says so, with the command that would serve the run, and `status` shows it pending), `cancel
// --force` of a run whose workers are gone, and `retry-failed` leaving out the failures that
// cannot succeed again unless `--all`.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportLine } from '../report/report-line.js';
import { readReport } from '../bench/catalog-audit.js';
import { startOrAttach } from '../client/runs.js';
import { loadManifest } from '../manifest/load.js';
import { cliSandbox, collectOutput, sha256File, type CliSandbox } from './support/cli.js';
import { runStart } from './support/plan.js';

let sandbox: CliSandbox;
let connection: Connection;
let client: Client;

const path = (...parts: string[]): string => join(sandbox.dir, ...parts);
const report = (name: string): ReportLine[] => readReport({ outputDir: path(`${name}-out`) });

/** An emulator config for the sandbox's embedded emulator (rate limits out of the way), as env. */
function emulatorEnv(file: string, lines: string[]): NodeJS.ProcessEnv {
  writeFileSync(
    path(file),
    [
      'rate_limits:',
      '  submit: { per_second: 1000, burst: 1000 }',
      '  query: { per_second: 1000, burst: 1000 }',
      ...lines,
    ].join('\n'),
  );
  return { PIXELMILL_EMULATOR_CONFIG: path(file) };
}

function writeManifest(name: string, items: string[]): string {
  const file = path(`${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      'limits: { requests_per_second: 100 }',
      `output: ./${name}-out`,
      'items:',
      ...items,
    ].join('\n'),
  );
  return file;
}

async function statusJson(run: string): Promise<Record<string, unknown>> {
  const status = await sandbox.run(['status', run, '--json']);
  expect(status.code, status.stderr).toBe(0);
  return JSON.parse(status.stdout) as Record<string, unknown>;
}

beforeAll(async () => {
  sandbox = await cliSandbox();
  const listed = await sandbox.run(['list']); // starts the sandbox's embedded dev server
  expect(listed.code, listed.stderr).toBe(0);
  connection = await Connection.connect({ address: `127.0.0.1:${sandbox.env.PIXELMILL_TEMPORAL_PORT}` });
  client = new Client({ connection });
}, 120_000);
afterAll(async () => {
  await connection?.close();
  await sandbox?.stop();
});

describe('a request no worker is there to take', () => {
  /** An API account no worker of this sandbox serves: nothing polls its task queues. */
  const ACCOUNT = 'a00c0ffee00c0ffee';

  async function startIdleRun(runId: string, api: { emulated: boolean; apiBaseUrl: string }) {
    const file = writeManifest('idle', ['  - { id: i0, prompt: "an idle chair" }']);
    await startOrAttach(
      client,
      runId,
      runStart(file, { manifestHash: loadManifest(file).hash, apiAccount: ACCOUNT, ...api }),
      false,
    );
  }

  it('cancel says that it waits for a worker and how to start one; status shows it pending', async () => {
    await startIdleRun('pixelmill/idle', { emulated: true, apiBaseUrl: 'http://127.0.0.1:9' });
    // No worker serves it, so none answers its progress: what the files say is shown all the same.
    expect(await statusJson('idle')).toMatchObject({
      status: 'RUNNING',
      pendingRequests: [],
      outputDir: path('idle-out'),
      failure: null,
    });

    const cancelled = await sandbox.run(['cancel', 'idle']);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toBe(
      'pixelmill: pixelmill/idle: cancel requested; it takes effect when a worker serves the run ' +
        '(start one with: pixelmill run idle.yaml)\n',
    );

    // Both forms of status at once: each only reads.
    const [status, text] = await Promise.all([statusJson('idle.yaml'), sandbox.run(['status', 'idle'])]);
    expect(status).toMatchObject({ status: 'RUNNING', pendingRequests: [{ signal: 'cancel' }] });
    const [pending] = status.pendingRequests as { sentAt: string }[];
    expect(Date.now() - Date.parse(pending!.sentAt)).toBeLessThan(60_000);
    expect(text.stdout).toMatch(/^pending: cancel \(requested [\d:-]+ [\d:]+\), not yet taken by the run$/m);
  });

  it("on a cluster, the command is `pixelmill worker` for the run's API", async () => {
    await startIdleRun('pixelmill/idle-api', { emulated: false, apiBaseUrl: 'https://images.example' });
    const paused = await sandbox.run(['pause', 'pixelmill/idle-api'], {
      env: { TEMPORAL_ADDRESS: `127.0.0.1:${sandbox.env.PIXELMILL_TEMPORAL_PORT}` },
    });
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toBe(
      'pixelmill: pixelmill/idle-api: pause requested; it takes effect when a worker serves the run ' +
        '(start one with: PIXELMILL_API_BASE_URL=https://images.example PIXELMILL_API_KEY=... pixelmill worker)\n',
    );
    expect(await statusJson('pixelmill/idle-api')).toMatchObject({ pendingRequests: [{ signal: 'pause' }] });
  });
});

describe('cancel --force', () => {
  /** Outcome lines with status completed so far (the run writes them as it stores images). */
  function completedOutcomes(name: string): number {
    const state = path(`${name}-out`, '.pixelmill');
    if (!existsSync(state)) return 0;
    return readdirSync(state)
      .filter((dir) => dir.startsWith('outcomes-'))
      .flatMap((dir) =>
        readdirSync(join(state, dir)).map((file) => readFileSync(join(state, dir, file), 'utf8')),
      )
      .reduce((sum, text) => sum + (text.match(/"status":"completed"/g)?.length ?? 0), 0);
  }

  it('terminates a run whose workers are gone, with its shard, and writes its report from what is recorded', async () => {
    // 1K images take 0.2 s, 2K images ten minutes: four items are stored, four stay at the API.
    const env = emulatorEnv('stuck-emulator.yaml', [
      'time_scale: 1',
      'generation:',
      '  queue_seconds: [0.1, 0.1]',
      '  seconds: { 1K: [0.2, 0.2], 2K: [600, 600], 4K: [600, 600] }',
    ]);
    writeManifest('stuck', [
      ...[0, 1, 2, 3].map((i) => `  - { id: f${i}, prompt: "a quick chair ${i}" }`),
      ...[4, 5, 6, 7].map((i) => `  - { id: s${i}, prompt: "a slow chair ${i}", resolution: 2K }`),
    ]);
    const running = sandbox.spawn(['run', 'stuck.yaml', '--no-progress'], env);
    const ran = collectOutput(running, 300_000);
    await expect.poll(() => completedOutcomes('stuck'), { timeout: 120_000, interval: 200 }).toBe(4);

    // Served: the request is taken at once, and nothing is said about workers.
    const paused = await sandbox.run(['pause', 'stuck']);
    expect(paused.stdout).toBe('pixelmill: pixelmill/stuck: pause requested\n');
    await expect
      .poll(() => statusJson('stuck'), { timeout: 30_000, interval: 500 })
      .toMatchObject({ state: 'paused', pendingRequests: [] });
    expect((await sandbox.run(['resume', 'stuck'])).stdout).toBe(
      'pixelmill: pixelmill/stuck: resume requested\n',
    );

    running.kill('SIGKILL');
    await ran;
    const forced = await sandbox.run(['cancel', 'stuck', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    const printed = forced.stdout.trim().split('\n');
    expect(
      printed.every((line) => line.startsWith('pixelmill: ')),
      forced.stdout,
    ).toBe(true);
    expect(forced.stdout).toContain(
      'pixelmill: pixelmill/stuck: terminating the run and its shards (cancel --force): nothing more is submitted, tracked or stored\n',
    );
    expect(forced.stdout).toMatch(
      /^pixelmill: tasks already at the API keep running there and may be charged, but are not collected \(their task ids are in .*stuck-out\/\.pixelmill\/submits\)$/m,
    );
    expect(forced.stdout).toContain(
      'pixelmill: images already stored stay where they are, and in the report\n',
    );
    expect(forced.stdout).toContain('pixelmill: pixelmill/stuck: terminated, with 1 shard\n');
    expect(forced.stdout).toContain(
      'pixelmill: pixelmill/stuck: report written: 4 completed, 0 failed, 4 cancelled',
    );
    expect(forced.stdout).toContain(
      'reported cancelled (not_run), and are not retried; `pixelmill retry-failed pixelmill/stuck`',
    );

    for (const id of ['pixelmill/stuck', 'pixelmill/stuck/shard-0001']) {
      expect((await client.workflow.getHandle(id).describe()).status.name, id).toBe('TERMINATED');
    }
    const stuckReport = report('stuck');
    expect(stuckReport.map((line) => line.status)).toEqual([
      ...Array(4).fill('completed'),
      ...Array(4).fill('cancelled'),
    ]);
    for (const line of stuckReport.slice(0, 4)) {
      for (const image of line.images) expect(sha256File(path('stuck-out', image.path))).toBe(image.sha256);
    }
    for (const line of stuckReport.slice(4)) expect(line.error?.code).toBe('not_run');

    // status says why the run ended, in --json and in text; cancel says there is nothing to
    // cancel. All three only read the ended run: at the same time.
    const [json, text, again] = await Promise.all([
      statusJson('stuck'),
      sandbox.run(['status', 'stuck']),
      sandbox.run(['cancel', 'stuck']),
    ]);
    expect(json).toMatchObject({ status: 'TERMINATED', failure: 'pixelmill cancel --force' });
    expect(text.stdout).toMatch(/^terminated: pixelmill cancel --force$/m);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('pixelmill: pixelmill/stuck has ended (terminated): nothing to cancel\n');
  }, 240_000);
});

describe('retry-failed leaves out what cannot succeed again', () => {
  it('skips blocked prompts and refused parameters, says so, retries a refused submit; --all takes them too', async () => {
    writeManifest('skips', [
      '  - { id: p0, prompt: "an unbuildable chair" }', // SubmitRefused: worth another try
      '  - { id: b1, prompt: "a forbidden chair 1" }', // content_blocked
      '  - { id: b2, prompt: "a forbidden chair 2" }',
      '  - { id: z3, prompt: "a wide chair", size: "7:5" }', // 400 invalid_size
      // Enough accepted submits around p0's that five refusals prove it refused.
      ...Array.from({ length: 20 }, (_, i) => `  - { id: c${i + 4}, prompt: "a chair ${i + 4}" }`),
    ]);
    const fast = ['time_scale: 0.01'];
    const first = await sandbox.run(['run', 'skips.yaml', '--no-progress'], {
      env: emulatorEnv('skips-emulator.yaml', [
        ...fast,
        'generation: { blocked_words: [forbidden] }',
        'faults: { poisoned_prompt_words: [unbuildable] }',
      ]),
      timeoutMs: 180_000,
    });
    expect(first.code, first.stderr).toBe(3);
    const failed = Object.fromEntries(
      report('skips')
        .filter((line) => line.status === 'failed')
        .map((line) => [line.id, line.error]),
    );
    expect(Object.keys(failed)).toEqual(['p0', 'b1', 'b2', 'z3']);
    expect(failed.p0).toMatchObject({ type: 'SubmitRefused', code: 'build_request_failed' });
    expect(failed.b1).toMatchObject({ type: 'content_policy_violation', code: 'content_blocked' });
    expect(failed.z3).toMatchObject({ type: 'BadRequestError', code: 'api_bad_request' });
    expect(failed.z3?.message).toContain('400 invalid_size');

    // The API would now take all of them: only --all finds out.
    const lifted = emulatorEnv('lifted-emulator.yaml', [
      ...fast,
      'generation: { blocked_words: [] }',
      "sizes: ['1:1', '7:5']",
    ]);
    const retry = await sandbox.run(['retry-failed', 'skips', '--no-progress'], { env: lifted });
    expect(retry.code, retry.stderr).toBe(3);
    expect(retry.stderr).toContain(
      'pixelmill: skipping 3 items that cannot succeed again (content_blocked 2, invalid_size 1); --all retries them too\n',
    );
    expect(retry.stderr).toMatch(/started pixelmill\/skips\/retry-1: 1 failed item of pixelmill\/skips/);
    expect(
      report('skips')
        .filter((line) => line.status !== 'completed')
        .map((line) => line.id),
    ).toEqual(['b1', 'b2', 'z3']);

    const all = await sandbox.run(['retry-failed', 'skips', '--all', '--no-progress'], { env: lifted });
    expect(all.code, all.stderr).toBe(0);
    expect(all.stderr).not.toContain('skipping');
    expect(all.stderr).toMatch(/started pixelmill\/skips\/retry-2: 3 failed items of pixelmill\/skips/);
    expect(report('skips').every((line) => line.status === 'completed')).toBe(true);
  }, 300_000);
});
