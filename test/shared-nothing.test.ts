// Workers on machines that share nothing with the CLI but Temporal, the API and the object store.
// Two `pixelmill worker` processes each run in their own mount namespace (as root, `unshare -m`)
// with a private tmpfs over the folder the CLI's folders are made in: the honest simulation of
// separate machines, since they cannot see the CLI's folder or its manifest, while loopback is
// shared. The CLI starts an `s3://` run from a third folder
// with TEMPORAL_ADDRESS; the run completes and every image is in the bucket with its sha256. A
// local output, which the workers cannot reach, fails the run at once with one line naming the
// folder and the two fixes.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_API_KEY } from '../emulator/index.js';
import type { ReportLine } from '../activities/index.js';
import { CLI, collectOutput } from './support/cli.js';
import { startTestEmulator } from './support/emulator.js';
import type { RunningEmulator } from '../emulator/index.js';
import { spawnIsolatedNode } from '../bench/processes.js';
import { startS3Server, type S3TestServer } from '../bench/s3-server.js';
import { startDevServerEnv } from './support/temporal.js';
import { waitUntil } from './support/wait.js';

const BUCKET = 'catalog';
const ITEMS = 24;
let env: TestWorkflowEnvironment;
let s3: S3TestServer;
let emulator: RunningEmulator;
const workers: { child: ChildProcess; output: () => string; exited: Promise<unknown> }[] = [];
let account: string;
/** Where every CLI folder of this file is made: hidden from the workers. */
const hidden = mkdtempSync(join(tmpdir(), 'pixelmill-shared-nothing-'));

/** Nothing of this machine's Temporal, pixelmill or AWS settings: only what a test gives. */
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(TEMPORAL|PIXELMILL|AWS)_/.test(name)),
  );

/** `pixelmill worker` on its own "machine": it cannot see any folder made under `hidden`. */
function startIsolatedWorker(): (typeof workers)[number] {
  const child = spawnIsolatedNode([CLI, 'worker'], hidden, {
    env: {
      ...cleanEnv(),
      ...s3.env,
      TEMPORAL_ADDRESS: env.address,
      PIXELMILL_API_BASE_URL: emulator.url,
      PIXELMILL_API_KEY: DEMO_API_KEY,
    },
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output, exited: new Promise((resolve) => child.once('exit', resolve)) };
}

beforeAll(async () => {
  env = await startDevServerEnv();
  s3 = await startS3Server();
  await s3.createBucket(BUCKET);
  emulator = await startTestEmulator({
    time_scale: 0.01,
    rate_limits: { submit: { per_second: 200, burst: 200 }, query: { per_second: 200, burst: 200 } },
  });
  workers.push(startIsolatedWorker(), startIsolatedWorker());
  for (const worker of workers) {
    await waitUntil(
      'the worker to connect',
      () => {
        if (worker.child.exitCode !== null) throw new Error(`pixelmill worker exited:\n${worker.output()}`);
        return worker.output().includes('pixelmill worker connected');
      },
      60_000,
    );
  }
  account = /serving API account (a[0-9a-f]{16}) \(/.exec(workers[0]!.output())![1]!;
}, 120_000);

afterAll(async () => {
  for (const worker of workers) if (worker.child.exitCode === null) worker.child.kill('SIGTERM');
  await Promise.all(workers.map((worker) => worker.exited));
  await emulator?.close();
  await s3?.stop();
  await env?.teardown();
  rmSync(hidden, { recursive: true, force: true });
});

/** `pixelmill run FILE --wait` from a folder of its own, reaching the cluster by TEMPORAL_ADDRESS. */
function runFrom(dir: string, file: string) {
  const child = spawn(
    process.execPath,
    [CLI, 'run', file, '--wait', '--no-progress', '--api-account', account],
    {
      cwd: dir,
      env: {
        ...cleanEnv(),
        ...s3.env,
        HOME: dir,
        TEMPORAL_ADDRESS: env.address,
        PIXELMILL_API_BASE_URL: emulator.url,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return collectOutput(child, 180_000);
}

function catalog(name: string, output: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(hidden, `cli-${name}-`));
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `output: ${output}`,
      'items:',
      ...Array.from({ length: ITEMS }, (_, i) => `  - { id: p${i}, prompt: "shared-nothing product ${i}" }`),
    ].join('\n'),
  );
  return { dir, file };
}

async function objectText(key: string): Promise<Buffer> {
  const answer = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(await answer.Body!.transformToByteArray());
}

describe('workers that share nothing with the CLI', () => {
  it('complete an s3:// run: every image in the bucket with its sha256', async () => {
    const { dir, file } = catalog(
      'apart',
      `{ dir: "s3://${BUCKET}/apart", endpoint: "${s3.endpoint}", force_path_style: true }`,
    );
    const run = await runFrom(dir, file);
    expect(run.code, run.stderr).toBe(0);

    const report = (await objectText('apart/report.jsonl'))
      .toString('utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ReportLine);
    expect(report.map((line) => line.status)).toEqual(Array.from({ length: ITEMS }, () => 'completed'));
    for (const line of report) {
      for (const image of line.images) {
        const bytes = await objectText(`apart/${image.path}`);
        expect(createHash('sha256').update(bytes).digest('hex')).toBe(image.sha256);
      }
    }
    // The plan and the run's state went through the store too, under the output prefix.
    expect((await objectText('apart/summary.json')).toString('utf8')).toContain('"completed": 24');
  }, 240_000);

  it('fail a run with a local output at once, naming the folder and the two fixes', async () => {
    const { dir, file } = catalog('local', './out');
    const run = await runFrom(dir, file);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `this worker cannot see the run's plan at ${join(dir, 'out', '.pixelmill')}`,
    );
    expect(run.stderr).toContain('a shared volume');
    expect(run.stderr).toContain('s3:// output');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  }, 240_000);
});
