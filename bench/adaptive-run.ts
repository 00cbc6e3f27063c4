// One or more `pixelmill run` CLIs (embedded mode, each hosting its own workers) started at the
// same moment against ONE Temporal dev server and one emulator, with the same API key, as two
// people of one team starting their catalogs would. Their manifests name no rate unless asked
// (the governor discovers it). While they run, each run's live progress (the same query `pixelmill
// status` asks) is sampled every `sampleMs`, so the calls each run made can be told apart over time.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { runWorkflowId } from '../common/names.js';
import type { ApiCallCounts } from '../common/types.js';
import { liveProgress } from '../client/progress.js';
import { writeItemsFile, writeManifest } from './catalog-files.js';
import { benchCliEnv, type EmulatorProcess } from './emulator-process.js';
import { exited, spawnCli, startDevServerIn, stopRegisteredDevServer } from './processes.js';

export interface RunRequest {
  /** The manifest's name (the run is `pixelmill/<name>`). */
  name: string;
  /** An empty folder of its own: manifest, items, output, CLI log. */
  dir: string;
  items: number;
}

export interface RunGroupSpec {
  /** Holds the shared Temporal state (`.pixelmill/`). */
  dir: string;
  emulator: EmulatorProcess;
  runs: RunRequest[];
  /** `limits.requests_per_second`; absent: the manifest names no rate (discovered). */
  requestsPerSecond?: number;
  /** `limits.max_in_flight`; absent: pixelmill's default. */
  maxInFlight?: number;
  /** Epoch ms after which the CLIs are interrupted and their runs reported unfinished. */
  deadline: number;
  sampleMs: number;
  /**
   * Called every `tickMs` while the runs run (for instance to change the emulator's limits), on a
   * loop of its own so that slow progress queries do not delay it.
   */
  onTick?: () => Promise<void>;
  tickMs?: number;
}

export interface ProgressSample {
  /** Epoch ms the sample was asked at. */
  t_ms: number;
  /** What the run had counted (its shards' and finished shards' calls); null: no answer. */
  api_calls: ApiCallCounts | null;
  completed: number | null;
}

export interface RunOutcome {
  name: string;
  items: number;
  finished: boolean;
  exit_code: number | null;
  /** The run workflow's start and close (epoch ms, from Temporal); close null if still open. */
  start_ms: number;
  close_ms: number | null;
  wall_s: number;
  items_completed: number;
  images: number;
  /** summary.json's `api_calls` (what pixelmill counted), once the report is written. */
  reported_api_calls: ApiCallCounts | null;
  /** summary.json's `rates`: the calls per second the governor granted each group at the end. */
  final_rates: { submit: number | null; query: number | null } | null;
  samples: ProgressSample[];
  cli_log: string;
}

interface Summary {
  counts: { completed?: number };
  images: number;
  api_calls: ApiCallCounts;
  rates?: { submit?: { perSecond?: number }; query?: { perSecond?: number } };
}

function readSummary(dir: string): Summary | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, 'out', 'summary.json'), 'utf8')) as Summary;
  } catch {
    return undefined;
  }
}

async function sampleRun(client: Client, name: string): Promise<ProgressSample> {
  const t = Date.now();
  try {
    const live = await liveProgress(client, runWorkflowId(name), { deadlineMs: 3_000 });
    return { t_ms: t, api_calls: live.apiCalls, completed: live.counts.completed };
  } catch {
    // Not started yet, already closed, or no worker answered in time.
    return { t_ms: t, api_calls: null, completed: null };
  }
}

/** Runs every manifest of `spec.runs` at once; resolves when all CLIs have exited. */
export async function runPixelmillGroup(spec: RunGroupSpec): Promise<RunOutcome[]> {
  const manifests = await Promise.all(
    spec.runs.map(async (run) => {
      const itemsFile = await writeItemsFile(run.dir, run.items);
      return writeManifest(run.dir, {
        name: run.name,
        itemsFile,
        ...(spec.requestsPerSecond !== undefined ? { requestsPerSecond: spec.requestsPerSecond } : {}),
        ...(spec.maxInFlight !== undefined ? { maxInFlight: spec.maxInFlight } : {}),
      });
    }),
  );
  const stateDir = join(spec.dir, '.pixelmill');
  try {
    // Started here rather than by a CLI so its start-up is not part of the measured runs; every
    // CLI finds it through PIXELMILL_STATE_DIR and joins it.
    const { server, env: serverEnv } = await startDevServerIn(stateDir);
    const env = benchCliEnv(serverEnv, spec.emulator.url);
    const logs = spec.runs.map(() => '');
    const clis = spec.runs.map((run, i) => {
      const cli = spawnCli(['run', manifests[i]!, '--no-progress'], { cwd: run.dir, env });
      cli.stdout!.on('data', (chunk: Buffer) => (logs[i] += chunk.toString()));
      cli.stderr!.on('data', (chunk: Buffer) => (logs[i] += chunk.toString()));
      return cli;
    });
    let interrupted = false;
    const timer = setTimeout(
      () => {
        interrupted = true;
        for (const cli of clis) cli.kill('SIGINT');
      },
      Math.max(0, spec.deadline - Date.now()),
    );
    const codes: (number | null)[] = spec.runs.map(() => null);
    let running = clis.length;
    const done = Promise.all(
      clis.map(async (cli, i) => {
        codes[i] = await exited(cli);
        running--;
      }),
    );

    const samples: ProgressSample[][] = spec.runs.map(() => []);
    const connection = await Connection.connect({ address: server.address });
    try {
      const client = new Client({ connection, namespace: 'default' });
      const every = async (ms: number, body: () => Promise<void>): Promise<void> => {
        while (running > 0) {
          const tick = Date.now();
          await body();
          await Promise.race([done, sleep(Math.max(0, tick + ms - Date.now()))]);
        }
      };
      const sampling = every(spec.sampleMs, async () => {
        const taken = await Promise.all(spec.runs.map((run) => sampleRun(client, run.name)));
        taken.forEach((sample, i) => samples[i]!.push(sample));
      });
      const ticking = spec.onTick ? every(spec.tickMs ?? spec.sampleMs, spec.onTick) : undefined;
      await Promise.all([done, sampling, ticking]);
      clearTimeout(timer);

      const outcomes: RunOutcome[] = [];
      for (const [i, run] of spec.runs.entries()) {
        const logFile = join(run.dir, 'cli.log');
        writeFileSync(logFile, logs[i]!);
        const code = codes[i]!;
        if (code !== 0 && code !== 3 && !interrupted)
          throw new Error(
            `pixelmill run ${run.name} exited with code ${code}; see ${logFile}: ` +
              `${logs[i]!.trim().split('\n').at(-1)}`,
          );
        const description = await client.workflow.getHandle(runWorkflowId(run.name)).describe();
        const start = description.startTime.getTime();
        const close = description.closeTime?.getTime() ?? null;
        const summary = close !== null ? readSummary(run.dir) : undefined;
        const last = samples[i]!.findLast((sample) => sample.completed !== null);
        outcomes.push({
          name: run.name,
          items: run.items,
          finished: close !== null && !interrupted,
          exit_code: code,
          start_ms: start,
          close_ms: close,
          wall_s: Math.round(((close ?? Date.now()) - start) / 10) / 100,
          items_completed: summary?.counts.completed ?? last?.completed ?? 0,
          images: summary?.images ?? last?.completed ?? 0,
          reported_api_calls: summary?.api_calls ?? last?.api_calls ?? null,
          final_rates: summary?.rates
            ? {
                submit: summary.rates.submit?.perSecond ?? null,
                query: summary.rates.query?.perSecond ?? null,
              }
            : null,
          samples: samples[i]!,
          cli_log: logFile,
        });
      }
      return outcomes;
    } finally {
      clearTimeout(timer);
      await connection.close();
    }
  } finally {
    await stopRegisteredDevServer(stateDir);
  }
}
