// Proves CI really runs Temporal: both servers start from the resolved binaries (no SDK download)
// and run a workflow with an activity and a timer.
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveTemporalExecutable } from '../temporal/binaries.js';
import * as activities from './fixtures/hello-activities.js';
import { startDevServerEnv, startTimeSkippingEnv } from './support/temporal.js';

const workflowsPath = fileURLToPath(new URL('./fixtures/hello-workflow.ts', import.meta.url));

async function runHello(env: TestWorkflowEnvironment, sleepMs: number): Promise<string> {
  const taskQueue = `hello-${Math.random().toString(36).slice(2)}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath,
    activities,
  });
  const result = await worker.runUntil(
    env.client.workflow.execute('helloWorkflow', {
      taskQueue,
      workflowId: taskQueue,
      args: [{ name: 'pixelmill', sleepMs }],
    }),
  );
  return (result as { greeting: string }).greeting;
}

describe('Temporal binaries', () => {
  let env: TestWorkflowEnvironment | undefined;
  afterEach(async () => {
    await env?.teardown();
    env = undefined;
  });

  it('resolves both binaries to files on this machine, not to the SDK download', () => {
    for (const binary of ['cli', 'test-server'] as const) {
      const resolved = resolveTemporalExecutable(binary);
      expect(resolved.source).not.toBe('sdk-download');
      expect(resolved.executable.type).toBe('existing-path');
    }
  });

  it('prefers the env var, and rejects one that is not executable with a clear message', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelmill-bin-'));
    const fake = join(dir, 'temporal');
    writeFileSync(fake, '#!/bin/sh\n');
    const saved = process.env.TEMPORAL_CLI_PATH;
    try {
      chmodSync(fake, 0o755);
      process.env.TEMPORAL_CLI_PATH = fake;
      expect(resolveTemporalExecutable('cli')).toEqual({
        executable: { type: 'existing-path', path: fake },
        source: 'env TEMPORAL_CLI_PATH',
      });
      chmodSync(fake, 0o644);
      expect(() => resolveTemporalExecutable('cli')).toThrow(
        /TEMPORAL_CLI_PATH=.* is not an executable file/,
      );
    } finally {
      if (saved === undefined) delete process.env.TEMPORAL_CLI_PATH;
      else process.env.TEMPORAL_CLI_PATH = saved;
    }
  });

  it('runs a workflow on a real dev server (temporal server start-dev)', async () => {
    env = await startDevServerEnv();
    expect(await runHello(env, 50)).toBe('hello, pixelmill');
  });

  it('runs a workflow on the time-skipping test server, skipping a one-day timer', async () => {
    env = await startTimeSkippingEnv();
    expect(await runHello(env, 24 * 3600 * 1000)).toBe('hello, pixelmill');
  });
});
