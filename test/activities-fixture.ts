// Shared fixtures of the activities tests (not a test file itself): a manifest written into a temp
// dir and removed after the file's tests, and helpers to run activities the way a worker would.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { request } from 'undici';
import { afterAll, expect } from 'vitest';
import { ApplicationFailure } from '@temporalio/activity';
import type { createActivities } from '../activities/index.js';
import type { PlanRef, StoreRequest } from '../common/types.js';
import { loadManifest } from '../manifest/load.js';
import { rejection } from './support/assertions.js';
import { LocalResultStore } from '../storage/local.js';
import type { ResultStore } from '../storage/result-store.js';
import type { ManualClock } from './support/emulator.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export interface ManifestFixture {
  dir: string;
  file: string;
  hash: string;
  outputDir: string;
}

/** Writes `m.yaml` (the given lines) and any extra files into a fresh temp dir. */
export function writeManifest(lines: string[], files: Record<string, string> = {}): ManifestFixture {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-activities-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  const file = join(dir, 'm.yaml');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return { dir, file, hash: loadManifest(file).hash, outputDir: join(dir, 'out') };
}

export { rejection };

/** The rejection of `promise`, which must be an ApplicationFailure. */
export async function applicationFailure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

/** Runs `fn(input)` inside an activity context (heartbeats, info, cancellation). */
export function inActivity<I, O>(
  fn: (input: I) => Promise<O>,
  input: I,
  info: ConstructorParameters<typeof MockActivityEnvironment>[0] = {},
  client?: Client,
  /** Temporal's side of each heartbeat: `env.cancel('NOT_FOUND')` for an attempt it has given up. */
  onHeartbeat?: (env: MockActivityEnvironment) => void,
): { result: Promise<O>; heartbeats: unknown[] } {
  // Failed attempts are what several tests expect; the SDK would log each one as a warning.
  const env = new MockActivityEnvironment(info, {
    logger: new DefaultLogger('ERROR'),
    ...(client ? { client } : {}),
  });
  const heartbeats: unknown[] = [];
  env.on('heartbeat', (details: unknown) => {
    heartbeats.push(details);
    onHeartbeat?.(env);
  });
  return { result: env.run(fn, input), heartbeats };
}

/** sha256 and size of what the result host serves at `url`, fetched independently. */
export async function servedImage(url: string): Promise<{ sha256: string; bytes: number }> {
  const response = await request(url);
  expect(response.statusCode).toBe(200);
  const body = Buffer.from(await response.body.arrayBuffer());
  return { sha256: createHash('sha256').update(body).digest('hex'), bytes: body.length };
}

/**
 * Submits the plan's items `indices` (attempt 1), lets the emulator's manual clock run past their
 * generation, and fetches each task: the store requests a shard would hand to storeResults.
 */
export async function completedTasks(
  activities: ReturnType<typeof createActivities>,
  plan: PlanRef,
  clock: ManualClock,
  indices: number[],
): Promise<StoreRequest[]> {
  const requests: StoreRequest[] = [];
  for (const index of indices) {
    const { taskId } = await activities.submitItem({ plan, index, attempt: 1 });
    requests.push({ index, taskId, urls: [], attempts: 1, creditsCost: 0 });
  }
  clock.advance(10 * 60_000);
  for (const request of requests) {
    const task = await activities.fetchTask({ plan, taskId: request.taskId });
    request.urls = task.urls ?? [];
    request.creditsCost = task.creditsCost ?? 0;
  }
  return requests;
}

/**
 * Local stores whose writes first ask `refusal` (with the path and the folder), which may return
 * the error a broken store would throw for it: credentials revoked, a store down for some paths.
 */
export function storesRefusing(
  refusal: (path: string, outputDir: string) => Error | undefined,
): (outputDir: string) => ResultStore {
  return (outputDir) => {
    const local = new LocalResultStore(outputDir);
    return {
      location: local.location,
      has: (path, expected) => local.has(path, expected),
      putFile: (path, file) => local.putFile(path, file),
      copy: (from, to, image) => local.copy(from, to, image),
      remove: (paths) => local.remove(paths),
      put: (path, body) => {
        const error = refusal(path, outputDir);
        if (error) throw error;
        return local.put(path, body);
      },
    };
  };
}
