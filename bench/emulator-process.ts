// The emulator as a benchmark runs it: its own process (so its CPU is not the orchestrator's), a
// config file written from one description so that pixelmill and the baseline face identical
// emulators, and its /_emulator/stats read back as the ground truth of API calls.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { stringify } from 'yaml';
import { DEFAULT_EMULATOR_CONFIG } from '../emulator/index.js';
import type { EmulatorStats } from '../emulator/apimart/routes/admin.js';
import { exited, spawnCli, stopChild } from './processes.js';

export const BENCH_API_KEY = 'sk-bench-key';
export const BENCH_WEBHOOK_SECRET = 'whsec_bench';

/** The environment of a `pixelmill` CLI run against the bench's emulator and dev server. */
export function benchCliEnv(serverEnv: NodeJS.ProcessEnv, emulatorUrl: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...serverEnv,
    PIXELMILL_API_BASE_URL: emulatorUrl,
    PIXELMILL_API_KEY: BENCH_API_KEY,
    PIXELMILL_WEBHOOK_SECRET: BENCH_WEBHOOK_SECRET,
  };
}

export interface EmulatorSetup {
  timeScale: number;
  /** Requests per second of each bucket (submit, query); the burst is the same. */
  requestsPerSecond: number;
}

export interface EmulatorProcess {
  url: string;
  pid: number;
  stats(): Promise<EmulatorStats>;
  stop(): Promise<void>;
}

/** Mean seconds from submit to a finished 1K task, after time compression. */
export function meanGenerationSeconds(timeScale: number): number {
  const mean = ([min, max]: readonly [number, number]): number => (min + max) / 2;
  const { queue_seconds: queue, seconds } = DEFAULT_EMULATOR_CONFIG.generation;
  return (mean(queue) + mean(seconds['1K'])) * timeScale;
}

function configFor(setup: EmulatorSetup): Record<string, unknown> {
  const bucket = { per_second: setup.requestsPerSecond, burst: Math.max(1, setup.requestsPerSecond) };
  return {
    port: 0,
    time_scale: setup.timeScale,
    seed: 1,
    accounts: [
      {
        id: 'acct_bench',
        credits: 1_000_000_000,
        webhook_secret: BENCH_WEBHOOK_SECRET,
        keys: [{ key: BENCH_API_KEY }],
      },
    ],
    rate_limits: { submit: bucket, query: bucket },
  };
}

/** Starts `pixelmill emulator --config <file>` and waits until it listens. */
export async function startEmulatorProcess(dir: string, setup: EmulatorSetup): Promise<EmulatorProcess> {
  const file = join(dir, 'emulator.yaml');
  writeFileSync(file, stringify(configFor(setup)));
  const child = spawnCli(['emulator', '--config', file], { stdio: ['ignore', 'pipe', 'inherit'] });
  let url: string | undefined;
  for await (const line of createInterface({ input: child.stdout! })) {
    url = /listening on (\S+)/.exec(line)?.[1];
    if (url) break;
  }
  if (!url) {
    await exited(child);
    throw new Error(`the emulator exited (code ${child.exitCode}) before it listened`);
  }
  child.stdout!.resume();
  const base = url;
  return {
    url: base,
    pid: child.pid!,
    async stats() {
      const response = await request(`${base}/_emulator/stats`);
      return (await response.body.json()) as EmulatorStats;
    },
    stop: () => stopChild(child),
  };
}
