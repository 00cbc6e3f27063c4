// One pixelmill run as a cluster's user makes it: a `pixelmill worker` process serving the API
// account, and `pixelmill run manifest.yaml --wait` starting the run on the Temporal server that
// TEMPORAL_ADDRESS names (the cluster, or a dev server standing in for one), after `pixelmill
// setup` has prepared the namespace. Measured from outside as bench/pixelmill-run.ts measures an
// embedded run: the run workflow's start-to-close from Temporal, /proc CPU and peak RSS of the CLI
// and of the worker from the CLI's spawn to its exit (the worker's start-up is left out, as it
// serves many runs), and a caller's meter of the Temporal side over the same window. Before the
// run, the worker can be left polling with nothing to do for a while, the same meters running: what
// the Temporal side and the worker spend per second whatever the rate, apart from what images cost.
import { createReadStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { runWorkflowId } from '../common/names.js';
import { writeItemsFile, writeManifest } from './catalog-files.js';
import { benchCliEnv, type EmulatorProcess } from './emulator-process.js';
import { mapValues, round } from './figures.js';
import { runHistoryFigures, type HistoryFigures } from './histories.js';
import { exited, exitedBy, ProcessSampler, spawnCli, stopChild, type ThreadGroup } from './processes.js';

const WORKER_READY_TIMEOUT_MS = 120_000;

/** What the Temporal side spent during the run, by process: started at the CLI's spawn. */
export interface CpuMeter {
  /** CPU seconds by process name since the meter started. */
  stop(): Record<string, number>;
}

export interface WorkerRunSpec {
  /** An empty folder for the manifest, items, output and logs. */
  dir: string;
  name: string;
  emulator: EmulatorProcess;
  items: number;
  requestsPerSecond: number;
  maxInFlight: number;
  /** The frontend's host:port, and a namespace `pixelmill setup` may create. */
  temporal: { address: string; namespace: string };
  /** Started just before `pixelmill run`, stopped as it exits. */
  meterTemporal: () => CpuMeter;
  /** Epoch ms after which the CLI is interrupted and the run reported as unfinished. */
  deadline: number;
  /** Seconds the worker polls with no run before it, metered; none if absent. */
  idleSeconds?: number;
}

/** CPU seconds of the worker and of the Temporal side (by process) over a metered window. */
export interface WindowCpu {
  seconds: number;
  cpu_s: { worker: number; temporal: Record<string, number> };
}

export interface WorkerRunFigures {
  finished: boolean;
  exit_code: number | null;
  /** Run workflow start to close, from Temporal. */
  wall_s: number;
  items_completed: number;
  images: number;
  bytes_stored: number;
  /** CPU seconds, user and system, from the CLI's spawn to its exit (window_s). */
  cpu_s: { cli: number; worker: number; temporal: Record<string, number> };
  window_s: number;
  /** The worker polling before the run, nothing to do (with `idleSeconds`). */
  idle: WindowCpu | null;
  worker_cpu_by_thread_s: Record<ThreadGroup, number>;
  peak_rss_mb: { cli: number; worker: number };
  histories: HistoryFigures;
  logs: { cli: string; worker: string };
}

/** stdout and stderr of `child`, gathered into one string as they come. */
function gather(child: ReturnType<typeof spawnCli>): () => string {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return () => output;
}

async function setUpNamespace(env: NodeJS.ProcessEnv, dir: string): Promise<void> {
  const setup = spawnCli(['setup'], { cwd: dir, env });
  const output = gather(setup);
  const code = await exited(setup);
  if (code !== 0) throw new Error(`pixelmill setup exited with code ${code}: ${output().trim()}`);
}

/** `pixelmill worker`, once it says it is connected and serving the account. */
async function startWorker(
  env: NodeJS.ProcessEnv,
  dir: string,
): Promise<{ child: ReturnType<typeof spawnCli>; output: () => string }> {
  const child = spawnCli(['worker', '--identity', 'bench-worker'], { cwd: dir, env });
  const output = gather(child);
  const deadline = Date.now() + WORKER_READY_TIMEOUT_MS;
  while (!output().includes('pixelmill worker connected')) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`pixelmill worker exited (${child.exitCode ?? child.signalCode}): ${output().trim()}`);
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`pixelmill worker did not connect within ${WORKER_READY_TIMEOUT_MS / 1000} s`);
    }
    await sleep(100);
  }
  return { child, output };
}

async function runTimes(
  temporal: WorkerRunSpec['temporal'],
  workflowId: string,
): Promise<{ wallS: number; closed: boolean }> {
  const connection = await Connection.connect({ address: temporal.address });
  try {
    const client = new Client({ connection, namespace: temporal.namespace });
    const description = await client.workflow.getHandle(workflowId).describe();
    const end = description.closeTime ?? new Date();
    return {
      wallS: (end.getTime() - description.startTime.getTime()) / 1000,
      closed: description.closeTime !== undefined,
    };
  } finally {
    await connection.close();
  }
}

async function reportTotals(file: string): Promise<{ completed: number; images: number; bytes: number }> {
  const totals = { completed: 0, images: 0, bytes: 0 };
  for await (const line of createInterface({ input: createReadStream(file) })) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line) as { status: string; images: { bytes: number }[] };
    if (entry.status === 'completed') totals.completed++;
    totals.images += entry.images.length;
    totals.bytes += entry.images.reduce((sum, image) => sum + image.bytes, 0);
  }
  return totals;
}

/** What the worker and the Temporal side spend in `seconds` with the worker polling and no run. */
async function idleCpu(worker: number, spec: WorkerRunSpec, seconds: number): Promise<WindowCpu> {
  const sampler = new ProcessSampler(worker, 1_000);
  const meter = spec.meterTemporal();
  const started = performance.now();
  await sleep(seconds * 1000);
  const temporal = meter.stop();
  sampler.stop();
  return {
    seconds: round((performance.now() - started) / 1000, 2),
    cpu_s: { worker: round(sampler.cpuSeconds(), 2), temporal: mapValues(temporal, (s) => round(s, 2)) },
  };
}

export async function runWithWorkerProcess(spec: WorkerRunSpec): Promise<WorkerRunFigures> {
  // runHistoryFigures reads the `default` namespace: the bench's runs live there on either server.
  if (spec.temporal.namespace !== 'default')
    throw new Error(`the bench runs in the default namespace, not ${spec.temporal.namespace}`);
  const itemsFile = await writeItemsFile(spec.dir, spec.items);
  const manifest = writeManifest(spec.dir, {
    name: spec.name,
    itemsFile,
    requestsPerSecond: spec.requestsPerSecond,
    maxInFlight: spec.maxInFlight,
  });
  const env = benchCliEnv(
    {
      TEMPORAL_ADDRESS: spec.temporal.address,
      TEMPORAL_NAMESPACE: spec.temporal.namespace,
      PIXELMILL_STATE_DIR: join(spec.dir, '.pixelmill'),
    },
    spec.emulator.url,
  );
  await setUpNamespace(env, spec.dir);
  const worker = await startWorker(env, spec.dir);
  const logs = { cli: join(spec.dir, 'cli.log'), worker: join(spec.dir, 'worker.log') };
  try {
    const idle = spec.idleSeconds ? await idleCpu(worker.child.pid!, spec, spec.idleSeconds) : null;
    const workerSampler = new ProcessSampler(worker.child.pid!, 200, { threads: true });
    const temporalMeter = spec.meterTemporal();
    const started = performance.now();
    const cli = spawnCli(['run', manifest, '--wait', '--no-progress'], { cwd: spec.dir, env });
    const cliSampler = new ProcessSampler(cli.pid!, 200);
    const cliOutput = gather(cli);
    const { code, interrupted } = await exitedBy(cli, spec.deadline);
    const temporalCpu = temporalMeter.stop();
    const windowS = (performance.now() - started) / 1000;
    const cliRssMb = cliSampler.stop();
    const workerRssMb = workerSampler.stop();
    writeFileSync(logs.cli, cliOutput());
    if (code !== 0 && code !== 3 && !interrupted)
      throw new Error(`pixelmill run exited with code ${code}; see ${logs.cli}: ${cliOutput().trim()}`);
    const workflowId = runWorkflowId(spec.name);
    const { wallS, closed } = await runTimes(spec.temporal, workflowId);
    const histories = await runHistoryFigures(spec.temporal.address, workflowId, spec.items);
    const totals = closed
      ? await reportTotals(join(spec.dir, 'out', 'report.jsonl'))
      : { completed: 0, images: 0, bytes: 0 };
    return {
      finished: closed && !interrupted,
      exit_code: code,
      wall_s: round(wallS, 2),
      items_completed: totals.completed,
      images: totals.images,
      bytes_stored: totals.bytes,
      cpu_s: {
        cli: round(cliSampler.cpuSeconds(), 2),
        worker: round(workerSampler.cpuSeconds(), 2),
        temporal: mapValues(temporalCpu, (s) => round(s, 2)),
      },
      window_s: round(windowS, 2),
      idle,
      worker_cpu_by_thread_s: mapValues(workerSampler.cpuSecondsByThread(), (s) => round(s, 2)),
      peak_rss_mb: { cli: cliRssMb, worker: workerRssMb },
      histories,
      logs,
    };
  } finally {
    await stopChild(worker.child);
    writeFileSync(logs.worker, worker.output());
  }
}
