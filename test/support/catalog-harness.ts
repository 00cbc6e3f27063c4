// End-to-end catalog runs for the durability tests: a real Temporal dev server, the emulator over
// HTTP on a compressed clock, a manifest in a temp dir, and workers either in this process or as
// `pixelmill worker` child processes (which a test may SIGKILL). Everything started here is
// stopped in this module's afterAll for the importing file, or by the caller earlier.
import './quiet-runtime.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll } from 'vitest';
import { createActivityRuntime, type ActivityDeps } from '../../activities/index.js';
import { runWorkflowId, taskQueuesOf } from '../../common/names.js';
import type { RunInput, RunResult } from '../../common/types.js';
import { DEMO_API_KEY, type EmulatorConfigOverrides, type RunningEmulator } from '../../emulator/index.js';
import { loadManifest } from '../../manifest/load.js';
import { createPixelmillWorkers } from '../../worker/workers.js';
import { CLI } from './cli.js';
import { startTestEmulator } from './emulator.js';
import { startDevServerEnv } from './temporal.js';
import { frozenPlan } from './plan.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** Emulator settings for fast runs: tasks take about 0.1 s, rate limits out of the way. */
export const FAST_EMULATOR: EmulatorConfigOverrides = {
  time_scale: 0.002,
  rate_limits: { submit: { per_second: 5000, burst: 5000 }, query: { per_second: 5000, burst: 5000 } },
};

export interface CatalogHarness {
  env: TestWorkflowEnvironment;
  emulator: RunningEmulator;
  /** A fresh temp dir, removed with the harness. */
  dir: string;
}

/** A dev server and a temp dir, both torn down when the test file ends. */
export async function startTemporalHarness(): Promise<Omit<CatalogHarness, 'emulator'>> {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-catalog-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const env = await startDevServerEnv();
  cleanups.push(() => env.teardown());
  return { env, dir };
}

/** A dev server, an emulator and a temp dir, all torn down when the test file ends. */
export async function startCatalogHarness(
  emulatorConfig: EmulatorConfigOverrides = FAST_EMULATOR,
): Promise<CatalogHarness> {
  const { env, dir } = await startTemporalHarness();
  return { env, dir, emulator: await startTestEmulator(emulatorConfig) };
}

export interface CatalogItem {
  id: string;
  prompt: string;
  n?: number;
  size?: string;
  resolution?: string;
}

export interface CatalogOptions {
  name: string;
  items: CatalogItem[];
  baseUrl: string;
  requestsPerSecond?: number | 'auto';
  maxInFlight?: number;
  budgetCredits?: number;
  /** `limits.task_timeout`, e.g. `10s`. */
  taskTimeout?: string;
  retry?: { maxAttempts: number; on: string[] };
}

export interface Catalog {
  file: string;
  hash: string;
  outputDir: string;
  runId: string;
}

/** Writes `<dir>/<name>.yaml` with its items inline and output under `<dir>/<name>-out`. */
export function writeCatalog(dir: string, options: CatalogOptions): Catalog {
  const limits = [
    // 'auto': the rate governor discovers it (the manifest's default).
    ...(options.requestsPerSecond === 'auto'
      ? []
      : [`requests_per_second: ${options.requestsPerSecond ?? 500}`]),
    ...(options.maxInFlight !== undefined ? [`max_in_flight: ${options.maxInFlight}`] : []),
    ...(options.budgetCredits !== undefined ? [`budget_credits: ${options.budgetCredits}`] : []),
    ...(options.taskTimeout !== undefined ? [`task_timeout: ${options.taskTimeout}`] : []),
  ];
  const lines = [
    `name: ${options.name}`,
    `api: { base_url: "${options.baseUrl}" }`,
    `limits: { ${limits.join(', ')} }`,
    `output: ./${options.name}-out`,
    ...(options.retry
      ? [`retry: { max_attempts: ${options.retry.maxAttempts}, on: ${JSON.stringify(options.retry.on)} }`]
      : []),
    'items:',
    ...options.items.map((item) => `  - ${JSON.stringify(item)}`),
  ];
  const file = join(dir, `${options.name}.yaml`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return {
    file,
    hash: loadManifest(file).hash,
    outputDir: join(dir, `${options.name}-out`),
    runId: runWorkflowId(options.name),
  };
}

export type RunHandle = WorkflowHandle<(input: RunInput) => Promise<RunResult>>;

/** Starts the catalog's run directly with the client, as `pixelmill run` does. */
export async function startRun(
  client: Client,
  catalog: Catalog,
  tuning?: RunInput['tuning'],
  options: { webhookBaseUrl?: string; apiAccount?: string } = {},
): Promise<RunHandle> {
  const input: RunInput = {
    plan: await frozenPlan(catalog.file),
    manifestHash: catalog.hash,
    ...(options.apiAccount ? { apiAccount: options.apiAccount } : {}),
    emulated: false,
    ...(tuning ? { tuning } : {}),
    ...(options.webhookBaseUrl ? { webhookBaseUrl: options.webhookBaseUrl } : {}),
  };
  return client.workflow.start<(input: RunInput) => Promise<RunResult>>('runWorkflow', {
    workflowId: catalog.runId,
    taskQueue: taskQueuesOf(input.apiAccount).workflow,
    args: [input],
    memo: { manifestHash: input.manifestHash, manifestFile: catalog.file, plan: input.plan, emulated: false },
  });
}

/**
 * pixelmill's three workers in this process, their activities built from `deps`: by default the
 * first API's demo key, the API address each manifest's `api.base_url`. Stopped with the harness.
 * They serve the runs started without an API account, or those of `apiAccount` (startRun's
 * option): workers of their own, whose evidence of the API (activities/api-evidence.ts) is that
 * account's alone, for runs side by side against different emulators.
 */
export async function startInProcessWorkers(
  env: TestWorkflowEnvironment,
  deps: ActivityDeps = { apiKey: DEMO_API_KEY, env: {} },
  apiAccount?: string,
) {
  const runtime = createActivityRuntime(deps);
  const workers = await createPixelmillWorkers({
    connection: env.nativeConnection,
    namespace: 'default',
    // Each run's API is its manifest's api.base_url, whatever the account.
    queues: taskQueuesOf(apiAccount),
    activities: runtime.activities,
    shutdownGraceTime: '1 second',
  });
  const running = workers.run();
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    workers.shutdown();
    await running;
    await runtime.close();
  };
  cleanups.push(stop);
  return { stop, running };
}

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves once the worker says it is polling; rejects if it exits first. */
  ready: Promise<void>;
  output(): string;
  /** SIGKILL, then wait for the process to be gone. */
  kill(): Promise<void>;
}

/** Whose key a worker process holds: the demo key of the first API unless told otherwise. */
export interface WorkerKey {
  /** The variable that holds it (a manifest's `api.api_key_env`), passed as `--api-key-env`. */
  env: string;
  value: string;
}

/**
 * `pixelmill worker` (the built CLI) against the given Temporal address, for the API at
 * `apiBaseUrl` with the demo key, or with `key` (another provider's, in the variable its manifest names).
 */
export function spawnWorkerProcess(
  temporalAddress: string,
  cwd: string,
  apiBaseUrl: string,
  key?: WorkerKey,
): WorkerProcess {
  const args = key ? ['worker', '--api-key-env', key.env] : ['worker'];
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      ...(key ? { [key.env]: key.value } : { PIXELMILL_API_KEY: DEMO_API_KEY }),
      PIXELMILL_API_BASE_URL: apiBaseUrl,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('pixelmill worker connected')) resolve();
    });
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then(() => reject(new Error(`pixelmill worker exited early:\n${output}`)));
  });
  ready.catch(() => undefined); // observed by the caller; no unhandled rejection after a kill
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  cleanups.push(kill);
  return { child, ready, output: () => output, kill };
}
