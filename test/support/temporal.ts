// Starts real Temporal servers for tests, from the binaries temporal/binaries.ts resolves.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { explainMissingBinary, resolveTemporalExecutable } from '../../temporal/binaries.js';

/** A real `temporal server start-dev` on 127.0.0.1 and a free port, in-memory. */
export async function startDevServerEnv(): Promise<TestWorkflowEnvironment> {
  const resolved = resolveTemporalExecutable('cli');
  try {
    return await TestWorkflowEnvironment.createLocal({
      server: { executable: resolved.executable, ip: '127.0.0.1', log: { format: 'pretty', level: 'error' } },
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
