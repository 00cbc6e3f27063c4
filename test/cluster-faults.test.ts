// Server-side faults in the middle of a run on the real cluster (test/support/cluster.ts): the
// history service SIGKILLed and started again, then PostgreSQL restarted (every connection cut),
// while two `pixelmill worker` processes work through 200 items paced at 20 API calls/s. The
// run completes with every item, each image on disk as the report says, and at most one
// duplicate submit per fault. (Issue 43's full chaos run, 1,000 items with workers killed and cut
// off, is not this file.)
//
// Skipped, saying why, only on a machine without Go (the server cannot be built there).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import { groundTruth, readReport, sha256, submissionsByPrompt } from '../bench/catalog-audit.js';
import { FAST_EMULATOR, writeCatalog } from './support/catalog-harness.js';
import { CLI, collectOutput } from './support/cli.js';
import { clusterTools, startTemporalCluster, type TemporalCluster } from './support/cluster.js';
import { startTestEmulator } from './support/emulator.js';
import { waitUntil } from './support/wait.js';

const installed = await clusterTools();
const skipReason = 'skip' in installed ? installed.skip : undefined;
const ITEMS = 200;
const FAULTS = 2;

let cluster: TemporalCluster;
let emulator: RunningEmulator;
let dir: string;
let baseEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  if (!('tools' in installed)) return;
  dir = mkdtempSync(join(tmpdir(), 'pixelmill-cluster-faults-'));
  baseEnv = {
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !/^(TEMPORAL|PIXELMILL|AWS)_/.test(name) && name !== 'XDG_CONFIG_HOME',
      ),
    ),
    HOME: dir,
    TEMPORAL_ADDRESS: '',
  };
  cluster = await startTemporalCluster(installed.tools);
  baseEnv = { ...baseEnv, TEMPORAL_ADDRESS: cluster.address, TEMPORAL_NAMESPACE: cluster.namespace };
  emulator = await startTestEmulator(FAST_EMULATOR);
}, 600_000);

afterAll(async () => {
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(skipReason !== undefined)(
  `a run on the cluster through server faults${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    it(`${ITEMS} items complete through a history SIGKILL and a PostgreSQL restart mid-run`, async () => {
      const setup = await collectOutput(
        spawn(process.execPath, [CLI, 'setup'], {
          cwd: dir,
          env: baseEnv,
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      );
      expect(setup.code, setup.stderr).toBe(0);

      const workers = [0, 1].map(() => {
        const child = spawn(process.execPath, [CLI, 'worker'], {
          cwd: dir,
          env: { ...baseEnv, PIXELMILL_API_BASE_URL: emulator.url, PIXELMILL_API_KEY: DEMO_API_KEY },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const worker = { child, output: '', exited: new Promise((resolve) => child.once('exit', resolve)) };
        child.stdout.on('data', (chunk: Buffer) => (worker.output += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (worker.output += chunk.toString()));
        return worker;
      });
      try {
        for (const worker of workers) {
          await waitUntil(
            'the workers to connect',
            () => {
              if (worker.child.exitCode !== null)
                throw new Error(`pixelmill worker exited:\n${worker.output}`);
              return worker.output.includes('pixelmill worker connected');
            },
            60_000,
          );
        }
        const account = /serving API account (a[0-9a-f]{16}) \(/.exec(workers[0]!.output)?.[1];
        expect(account).toBeDefined();
        const catalog = writeCatalog(dir, {
          name: 'cluster-faults',
          baseUrl: emulator.url,
          requestsPerSecond: 20,
          items: Array.from({ length: ITEMS }, (_, i) => ({
            id: `f${i}`,
            prompt: `cluster fault product ${i}`,
          })),
        });
        const run = collectOutput(
          spawn(
            process.execPath,
            [CLI, 'run', catalog.file, '--wait', '--no-progress', '--api-account', account!],
            {
              cwd: dir,
              env: baseEnv,
              stdio: ['ignore', 'pipe', 'pipe'],
            },
          ),
        );
        const submitted = async (): Promise<number> => (await groundTruth(emulator)).length;

        await waitUntil(
          'a fifth of the items submitted',
          async () => (await submitted()) >= ITEMS / 5,
          120_000,
          200,
        );
        await cluster.restartHistory();
        const afterHistory = await submitted();
        await waitUntil(
          'more items submitted after the history restart',
          async () => (await submitted()) >= afterHistory + ITEMS / 5,
          120_000,
          200,
        );
        await cluster.restartPostgres();
        // Both faults hit the run while it had items left.
        const afterPostgres = await submitted();
        expect(afterPostgres).toBeLessThan(ITEMS);

        const result = await run;
        expect(result.code, `${result.stderr}\n${workers.map((w) => w.output).join('\n')}`).toBe(0);
        const report = readReport(catalog);
        expect(report.map((line) => line.id).sort()).toEqual(
          Array.from({ length: ITEMS }, (_, i) => `f${i}`).sort(),
        );
        expect(report.filter((line) => line.status !== 'completed')).toEqual([]);
        for (const line of report) {
          for (const image of line.images) {
            expect(sha256(readFileSync(join(catalog.outputDir, image.path))), line.id).toBe(image.sha256);
          }
        }
        const perPrompt = submissionsByPrompt(await groundTruth(emulator));
        const extra = [...perPrompt.values()].reduce((sum, count) => sum + count - 1, 0);
        process.stderr.write(
          `cluster-faults: submitted ${afterHistory} after the history restart, ${afterPostgres} after ` +
            `PostgreSQL's; ${extra} duplicate submits\n`,
        );
        expect(perPrompt.size).toBe(ITEMS);
        expect(extra).toBeLessThanOrEqual(FAULTS);
      } finally {
        for (const worker of workers) if (worker.child.exitCode === null) worker.child.kill('SIGTERM');
        await Promise.all(workers.map((worker) => worker.exited));
      }
    }, 400_000);
  },
);
