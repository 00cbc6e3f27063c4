// Starts real Temporal servers for tests, from the binaries temporal/binaries.ts resolves.
import './quiet-runtime.js';
import { fileURLToPath } from 'node:url';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Runtime, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { taskQueuesOf } from '../../common/names.js';
import { explainMissingBinary, resolveTemporalExecutable } from '../../temporal/binaries.js';
import { WORKFLOW_BUNDLE_ENV } from '../../worker/workers.js';

/**
 * The least delay before a timer the server creates may fire. The server's default is 1 s (room
 * for clock skew between the hosts of a cluster): every shorter timer (a stubbed test's lookup
 * interval, a Retry-After under a second) waited a whole second. One process has no skew.
 */
const TEST_TIMER_SHIFT = '10ms';

/**
 * A real `temporal server start-dev` on 127.0.0.1 and a free port, in-memory, whose timers fire
 * when they are due (TEST_TIMER_SHIFT) rather than a second later at the earliest.
 */
export async function startDevServerEnv(): Promise<TestWorkflowEnvironment> {
  const resolved = resolveTemporalExecutable('cli');
  try {
    return await TestWorkflowEnvironment.createLocal({
      server: {
        executable: resolved.executable,
        ip: '127.0.0.1',
        log: { format: 'pretty', level: 'error' },
        extraArgs: ['--dynamic-config-value', `history.timerProcessorMaxTimeShift="${TEST_TIMER_SHIFT}"`],
      },
    });
  } catch (error) {
    throw explainMissingBinary('cli', resolved, error);
  }
}

/** The time-skipping test server: timers fire as soon as workflows are blocked on them. */
export async function startTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const resolved = resolveTemporalExecutable('test-server');
  try {
    return await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: resolved.executable } });
  } catch (error) {
    throw explainMissingBinary('test-server', resolved, error);
  }
}

const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

let bundled: Promise<WorkflowBundleOption> | undefined;
/**
 * pixelmill's workflow code: the test run's bundle (test/support/workflow-bundle.ts), else bundled
 * once per test file. A worker given the sources runs webpack at start-up (seconds of CPU), and a
 * file that starts fresh workers for each case paid it each time.
 */
function stubWorkflowBundle(): Promise<WorkflowBundleOption> {
  const codePath = process.env[WORKFLOW_BUNDLE_ENV];
  // The runtime's logger, as a worker bundling by itself would use (WARN: test/support/quiet-runtime.ts).
  bundled ??= codePath
    ? Promise.resolve({ codePath })
    : bundleWorkflowCode({ workflowsPath, logger: Runtime.instance().logger });
  return bundled;
}

/**
 * Runs `body` with workers on every task queue of `env`, serving `activities` (stubs): the queues
 * of runs started without an API account, or those of `apiAccount`'s runs (tests side by side).
 */
export async function withStubWorkers<T>(
  env: TestWorkflowEnvironment,
  activities: object,
  body: () => Promise<T>,
  apiAccount?: string,
): Promise<T> {
  const common = { connection: env.nativeConnection, activities };
  const queues = taskQueuesOf(apiAccount);
  const { workflow, ...activityQueues } = queues;
  const workflowBundle = await stubWorkflowBundle();
  const workers = await Promise.all([
    Worker.create({ ...common, taskQueue: workflow, workflowBundle }),
    ...Object.values(activityQueues).map((taskQueue) => Worker.create({ ...common, taskQueue })),
  ]);
  return workers.reduce<() => Promise<T>>((run, worker) => () => worker.runUntil(run()), body)();
}
