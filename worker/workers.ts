// The Workers of a pixelmill worker process, one per task queue of the API account it serves
// (the TypeScript SDK polls one queue per Worker, and refuses a second Worker on the same queue
// in one process):
// - workflow: the workflows (runs, shards, the account's rate governor), and the activities
//   that are neither API calls nor transfers;
// - api: the API calls of fixed-rate runs, dispatched at the run's requests_per_second;
// - submit, query: the API calls of runs whose rate is discovered, per endpoint group,
//   dispatched at the rates the governor sets;
// - transfer: downloads from the result host into storage.
// Every activity is registered on every queue: the workflow picks the queue per call.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { TaskQueues } from '../common/names.js';

export interface PixelmillWorkersOptions {
  connection: NativeConnection;
  namespace: string;
  /** The task queues of the API account whose key the activities hold (common/names.ts). */
  queues: TaskQueues;
  /** From `createActivities(deps)` (activities/index.ts). */
  activities: object;
  /**
   * Per-worker cap on API calls per second, for servers that cannot take the run's limit as
   * task-queue config. The server applies it to the whole queue, last poller wins.
   */
  fallbackRequestsPerSecond?: number;
  /** Default: workflows/index, built (`dist/workflows/index.js`) or from source (`.ts`). */
  workflowsPath?: string;
  identity?: string;
  /** How long in-flight activities may finish after shutdown() before they are cancelled. */
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
}

export interface PixelmillWorkers {
  /** Runs them all until shutdown(); if one fails, stops the others and rejects with its error. */
  run(): Promise<void>;
  /** Starts a graceful shutdown of all three; safe to call more than once, or before run(). */
  shutdown(): void;
  /** Activities running now, by queue: what a graceful shutdown waits for. */
  inFlight(): InFlightActivities;
}

export interface InFlightActivities {
  /** Plans, outcome files, the report. */
  bookkeeping: number;
  /** API calls. */
  api: number;
  /** Downloads into the store. */
  transfer: number;
}

export function defaultWorkflowsPath(): string {
  for (const candidate of ['../workflows/index.js', '../workflows/index.ts']) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error('pixelmill: cannot find workflows/index (.js when built, .ts from source)');
}

/**
 * A workflow bundle built beforehand, loaded instead of the default: the tests build one per run
 * (test/support/workflow-bundle.ts) rather than one per worker from the sources.
 */
export const WORKFLOW_BUNDLE_ENV = 'PIXELMILL_WORKFLOW_BUNDLE';

/**
 * The bundle WORKFLOW_BUNDLE_ENV names; else the prebuilt bundle (`npm run build` writes
 * dist/workflow-bundle.js beside dist/worker/) when running the build, else the workflow sources
 * for the SDK to bundle at start-up (seconds of CPU).
 */
function workflowCode(
  workflowsPath: string | undefined,
): Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'> {
  if (workflowsPath !== undefined) return { workflowsPath };
  const given = process.env[WORKFLOW_BUNDLE_ENV];
  if (given) return { workflowBundle: { codePath: given } };
  const bundle = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));
  if (import.meta.url.endsWith('.js') && existsSync(bundle)) return { workflowBundle: { codePath: bundle } };
  return { workflowsPath: defaultWorkflowsPath() };
}

export async function createPixelmillWorkers(options: PixelmillWorkersOptions): Promise<PixelmillWorkers> {
  const common = {
    connection: options.connection,
    namespace: options.namespace,
    activities: options.activities,
    shutdownGraceTime: options.shutdownGraceTime ?? '10 seconds',
    // A heartbeat goes out at most this late, whatever the activity's heartbeat timeout: the
    // timeouts of workflows/activities.ts are short so that a dead worker is noticed quickly.
    maxHeartbeatThrottleInterval: '3 seconds',
    ...(options.identity !== undefined ? { identity: options.identity } : {}),
  } satisfies Partial<WorkerOptions>;

  // Sequential: the workflow Worker bundles the workflow code (seconds of CPU); a failure in one
  // create must not leave others polling.
  const workers: Worker[] = [];
  workers.push(
    await Worker.create({
      ...common,
      taskQueue: options.queues.workflow,
      ...workflowCode(options.workflowsPath),
    }),
  );
  // API calls: short HTTP calls, paced by the queues' dispatch rates, not by this concurrency.
  workers.push(
    await Worker.create({
      ...common,
      taskQueue: options.queues.api,
      maxConcurrentActivityTaskExecutions: 200,
      ...(options.fallbackRequestsPerSecond !== undefined
        ? { maxTaskQueueActivitiesPerSecond: options.fallbackRequestsPerSecond }
        : {}),
    }),
  );
  for (const taskQueue of [options.queues.submit, options.queues.query]) {
    workers.push(await Worker.create({ ...common, taskQueue, maxConcurrentActivityTaskExecutions: 200 }));
  }
  const transfer = await Worker.create({
    ...common,
    taskQueue: options.queues.transfer,
    maxConcurrentActivityTaskExecutions: 16,
  });
  workers.push(transfer);

  let stopping = false;
  const shutdown = (): void => {
    stopping = true;
    for (const worker of workers) {
      // shutdown() throws unless RUNNING; a Worker not yet running simply is not started.
      if (worker.getState() === 'RUNNING') worker.shutdown();
    }
  };

  const inFlight = (worker: Worker): number => worker.getStatus().numInFlightActivities;
  const [bookkeeping, ...apiCalls] = workers.filter((worker) => worker !== transfer);
  return {
    shutdown,
    inFlight: () => ({
      bookkeeping: inFlight(bookkeeping!),
      api: apiCalls.reduce((sum, worker) => sum + inFlight(worker), 0),
      transfer: inFlight(transfer),
    }),
    async run() {
      if (stopping) return;
      const results = await Promise.allSettled(
        workers.map((worker) =>
          worker.run().catch((error: unknown) => {
            shutdown();
            throw error;
          }),
        ),
      );
      const failure = results.find((result) => result.status === 'rejected');
      if (failure) throw failure.reason;
    },
  };
}
