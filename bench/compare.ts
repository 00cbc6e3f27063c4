// One side of the comparison: a fresh emulator (same config for both sides), the system under
// test against it, then the same figures for either side from the same sources.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BENCH_API_KEY,
  meanGenerationSeconds,
  startEmulatorProcess,
  type EmulatorProcess,
} from './emulator-process.js';
import { apiCallFigures, boundOf, mapValues, round, type ApiCallFigures, type Bound } from './figures.js';
import type { HistoryFigures } from './histories.js';
import type { BaselineFigures } from './baseline-api.js';
import { runPixelmill, type BenchS3Output } from './pixelmill-run.js';
import { exited, ProcessSampler, spawnNode, type ThreadGroup } from './processes.js';

const BASELINES = {
  naive: fileURLToPath(new URL('./naive.js', import.meta.url)),
  script: fileURLToPath(new URL('./script.js', import.meta.url)),
};

export interface CompareSpec {
  /** A folder of its own for this side. */
  dir: string;
  items: number;
  rps: number;
  timeScale: number;
  deadline: number;
}

export interface SideResult {
  system: 'pixelmill' | keyof typeof BASELINES;
  finished: boolean;
  items: number;
  items_completed: number;
  images: number;
  wall_s: number;
  /** For a side stopped by its time limit: wall x items / items completed; null when it finished. */
  projected_wall_s: number | null;
  bound: Bound;
  /** (projected) wall / bound; 1.0 is a perfect client. */
  ratio_to_bound: number;
  api_calls: ApiCallFigures;
  /** API calls / wall time: how much of the rate limit the client used. */
  api_calls_per_s: number;
  peak_rss_mb: number;
  /** CPU seconds of the client's process (pixelmill: the CLI hosting the workers). */
  cpu_s: number;
  /** CPU seconds of the emulator while it served this side: on a shared machine, not the client's. */
  emulator_cpu_s: number;
  /** pixelmill only: the run's Temporal histories. */
  histories: HistoryFigures | null;
  bytes_stored: number;
  /** Bytes of images stored / wall time. */
  rehost_mb_per_s: number;
  webhook_deliveries: Record<string, number> | null;
  /** Baselines only: images decoded, thumbnailed and checked (the script's --checks), and those flagged. */
  images_checked?: number;
  images_flagged?: number;
  /** pixelmill only: CLI process lifetime, the dev server's peak RSS, and where the CLI's output went. */
  process_s?: number;
  temporal_server_peak_rss_mb?: number;
  temporal_server_cpu_s?: number;
  /** The CLI's (or the baseline process's) CPU seconds by kind of thread. */
  cpu_by_thread_s?: Record<ThreadGroup, number>;
  log?: string;
}

interface Measured {
  finished: boolean;
  completed: number;
  images: number;
  wallS: number;
  bytes: number;
  rssMb: number;
  cpuS: number;
  histories: HistoryFigures | null;
  extra: Pick<
    SideResult,
    | 'process_s'
    | 'temporal_server_peak_rss_mb'
    | 'temporal_server_cpu_s'
    | 'cpu_by_thread_s'
    | 'log'
    | 'images_checked'
    | 'images_flagged'
  >;
}

async function measureSide(
  system: SideResult['system'],
  spec: CompareSpec,
  webhooks: boolean,
  run: (emulator: EmulatorProcess) => Promise<Measured>,
): Promise<SideResult> {
  mkdirSync(spec.dir, { recursive: true });
  const emulator = await startEmulatorProcess(spec.dir, {
    timeScale: spec.timeScale,
    requestsPerSecond: spec.rps,
  });
  const emulatorCpu = new ProcessSampler(emulator.pid);
  try {
    const measured = await run(emulator);
    emulatorCpu.stop();
    const stats = await emulator.stats();
    const bound = boundOf(spec.items, spec.rps, webhooks, meanGenerationSeconds(spec.timeScale));
    const calls = apiCallFigures(stats, measured.images);
    const projected =
      !measured.finished && measured.completed > 0
        ? round((measured.wallS * spec.items) / measured.completed, 2)
        : null;
    return {
      system,
      finished: measured.finished,
      items: spec.items,
      items_completed: measured.completed,
      images: measured.images,
      wall_s: measured.wallS,
      projected_wall_s: projected,
      bound,
      ratio_to_bound: round((projected ?? measured.wallS) / bound.seconds, 3),
      api_calls: calls,
      api_calls_per_s: measured.wallS > 0 ? round(calls.total / measured.wallS, 1) : 0,
      peak_rss_mb: measured.rssMb,
      cpu_s: measured.cpuS,
      emulator_cpu_s: round(emulatorCpu.cpuSeconds(), 2),
      histories: measured.histories,
      bytes_stored: measured.bytes,
      rehost_mb_per_s: measured.wallS > 0 ? round(measured.bytes / 1e6 / measured.wallS, 3) : 0,
      webhook_deliveries: webhooks ? stats.webhooks : null,
      ...measured.extra,
    };
  } finally {
    emulatorCpu.stop();
    await emulator.stop();
  }
}

export function comparePixelmill(
  spec: CompareSpec & {
    maxInFlight: number;
    webhooks?: Record<string, unknown>;
    s3?: BenchS3Output;
    cpuProfileDir?: string;
  },
): Promise<SideResult> {
  return measureSide('pixelmill', spec, spec.webhooks !== undefined, async (emulator) => {
    const figures = await runPixelmill({
      dir: spec.dir,
      name: 'bench-compare',
      emulator,
      items: spec.items,
      requestsPerSecond: spec.rps,
      maxInFlight: spec.maxInFlight,
      ...(spec.webhooks ? { webhooks: spec.webhooks } : {}),
      ...(spec.s3 ? { s3: spec.s3 } : {}),
      ...(spec.cpuProfileDir ? { cpuProfileDir: spec.cpuProfileDir } : {}),
      deadline: spec.deadline,
    });
    return {
      finished: figures.finished,
      completed: figures.items_completed,
      images: figures.images,
      wallS: figures.wall_s,
      bytes: figures.bytes_stored,
      rssMb: figures.peak_rss_mb,
      cpuS: figures.cpu_s,
      histories: figures.histories,
      extra: {
        process_s: figures.process_s,
        temporal_server_peak_rss_mb: figures.temporal_server_peak_rss_mb,
        temporal_server_cpu_s: figures.temporal_server_cpu_s,
        cpu_by_thread_s: figures.cpu_by_thread_s,
        log: figures.cli_log,
      },
    };
  });
}

export interface BaselineSpec {
  dir: string;
  items: number;
  concurrency: number;
  deadline: number;
  /** The provider's rate per endpoint group, told to the baseline (--rps); absent: none. */
  rps?: number;
  /** The script's --checks: pixelmill's decode, thumbnail and checks of each image. */
  checks?: boolean;
}

export type BaselineRun = BaselineFigures & {
  peak_rss_mb: number;
  cpu_s: number;
  cpu_by_thread_s: Record<ThreadGroup, number>;
};

/** A hand-written baseline (bench/naive.ts or bench/script.ts) as its own process against `emulator`. */
export async function runBaselineProcess(
  baseline: keyof typeof BASELINES,
  emulator: EmulatorProcess,
  spec: BaselineSpec,
): Promise<BaselineRun> {
  const args = [BASELINES[baseline], '--url', emulator.url, '--items', String(spec.items)];
  args.push('--concurrency', String(spec.concurrency), '--out', join(spec.dir, 'out'));
  args.push('--deadline', String(spec.deadline));
  if (spec.rps !== undefined) args.push('--rps', String(spec.rps));
  if (spec.checks) args.push('--checks');
  const child = spawnNode(args, {
    env: { ...process.env, PIXELMILL_API_KEY: BENCH_API_KEY },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const sampler = new ProcessSampler(child.pid!, 200, { threads: true });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await exited(child);
  const rssMb = sampler.stop();
  if (code !== 0) throw new Error(`the ${baseline} baseline exited with code ${code}`);
  return {
    ...(JSON.parse(out) as BaselineFigures),
    peak_rss_mb: rssMb,
    cpu_s: round(sampler.cpuSeconds(), 2),
    cpu_by_thread_s: mapValues(sampler.cpuSecondsByThread(), (s) => round(s, 2)),
  };
}

export function runNaive(emulator: EmulatorProcess, spec: BaselineSpec): Promise<BaselineRun> {
  return runBaselineProcess('naive', emulator, spec);
}

/** One side measured with a baseline process on its own fresh emulator. */
export function compareBaseline(
  baseline: keyof typeof BASELINES,
  spec: CompareSpec & { concurrency: number; toldRate: boolean; checks?: boolean },
): Promise<SideResult> {
  return measureSide(baseline, spec, false, async (emulator) => {
    const { dir, items, concurrency, deadline } = spec;
    const figures = await runBaselineProcess(baseline, emulator, {
      dir,
      items,
      concurrency,
      deadline,
      ...(spec.toldRate ? { rps: spec.rps } : {}),
      checks: spec.checks,
    });
    return {
      finished: figures.finished,
      completed: figures.items_completed,
      images: figures.images,
      wallS: figures.wall_s,
      bytes: figures.bytes_stored,
      rssMb: figures.peak_rss_mb,
      cpuS: figures.cpu_s,
      histories: null,
      extra: {
        cpu_by_thread_s: figures.cpu_by_thread_s,
        ...(spec.checks
          ? { images_checked: figures.images_checked, images_flagged: figures.images_flagged }
          : {}),
      },
    };
  });
}

export function compareNaive(spec: CompareSpec & { concurrency: number }): Promise<SideResult> {
  // Not told the rate: the baseline of issue #6 only waits out 429s.
  return compareBaseline('naive', { ...spec, toldRate: false });
}
