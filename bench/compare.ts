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
import { apiCallFigures, boundOf, round, type ApiCallFigures, type Bound } from './figures.js';
import type { HistoryFigures } from './histories.js';
import type { NaiveFigures } from './naive.js';
import { runPixelmill, type BenchS3Output } from './pixelmill-run.js';
import { exited, PeakRssSampler, spawnNode } from './processes.js';

const NAIVE = fileURLToPath(new URL('./naive.js', import.meta.url));

export interface CompareSpec {
  /** A folder of its own for this side. */
  dir: string;
  items: number;
  rps: number;
  timeScale: number;
  deadline: number;
}

export interface SideResult {
  system: 'pixelmill' | 'naive';
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
  /** pixelmill only: the run's Temporal histories. */
  histories: HistoryFigures | null;
  bytes_stored: number;
  /** Bytes of images stored / wall time. */
  rehost_mb_per_s: number;
  webhook_deliveries: Record<string, number> | null;
  /** pixelmill only: CLI process lifetime, the dev server's peak RSS, and where the CLI's output went. */
  process_s?: number;
  temporal_server_peak_rss_mb?: number;
  log?: string;
}

interface Measured {
  finished: boolean;
  completed: number;
  images: number;
  wallS: number;
  bytes: number;
  rssMb: number;
  histories: HistoryFigures | null;
  extra: Pick<SideResult, 'process_s' | 'temporal_server_peak_rss_mb' | 'log'>;
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
  try {
    const measured = await run(emulator);
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
      histories: measured.histories,
      bytes_stored: measured.bytes,
      rehost_mb_per_s: measured.wallS > 0 ? round(measured.bytes / 1e6 / measured.wallS, 3) : 0,
      webhook_deliveries: webhooks ? stats.webhooks : null,
      ...measured.extra,
    };
  } finally {
    await emulator.stop();
  }
}

export function comparePixelmill(
  spec: CompareSpec & { maxInFlight: number; webhooks?: Record<string, unknown>; s3?: BenchS3Output },
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
      deadline: spec.deadline,
    });
    return {
      finished: figures.finished,
      completed: figures.items_completed,
      images: figures.images,
      wallS: figures.wall_s,
      bytes: figures.bytes_stored,
      rssMb: figures.peak_rss_mb,
      histories: figures.histories,
      extra: {
        process_s: figures.process_s,
        temporal_server_peak_rss_mb: figures.temporal_server_peak_rss_mb,
        log: figures.cli_log,
      },
    };
  });
}

export interface NaiveSpec {
  dir: string;
  items: number;
  concurrency: number;
  deadline: number;
  /** The provider's rate per endpoint group, told to the baseline (naive.ts --rps); absent: none. */
  rps?: number;
}

/** The naive baseline (bench/naive.ts) as its own process against `emulator`; its figures and peak RSS. */
export async function runNaive(
  emulator: EmulatorProcess,
  spec: NaiveSpec,
): Promise<NaiveFigures & { peak_rss_mb: number }> {
  const args = [NAIVE, '--url', emulator.url, '--items', String(spec.items)];
  args.push('--concurrency', String(spec.concurrency), '--out', join(spec.dir, 'out'));
  args.push('--deadline', String(spec.deadline));
  if (spec.rps !== undefined) args.push('--rps', String(spec.rps));
  const child = spawnNode(args, {
    env: { ...process.env, PIXELMILL_API_KEY: BENCH_API_KEY },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const sampler = new PeakRssSampler(child.pid!);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await exited(child);
  const rssMb = sampler.stop();
  if (code !== 0) throw new Error(`the naive baseline exited with code ${code}`);
  return { ...(JSON.parse(out) as NaiveFigures), peak_rss_mb: rssMb };
}

export function compareNaive(spec: CompareSpec & { concurrency: number }): Promise<SideResult> {
  return measureSide('naive', spec, false, async (emulator) => {
    // Not told the rate (no --rps): the baseline of issue #6 only waits out 429s.
    const { dir, items, concurrency, deadline } = spec;
    const figures = await runNaive(emulator, { dir, items, concurrency, deadline });
    return {
      finished: figures.finished,
      completed: figures.items_completed,
      images: figures.images,
      wallS: figures.wall_s,
      bytes: figures.bytes_stored,
      rssMb: figures.peak_rss_mb,
      histories: null,
      extra: {},
    };
  });
}
