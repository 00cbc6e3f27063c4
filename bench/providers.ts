// `node dist/bench/providers.js`: issue 39's targets, per provider. 2,000 items (--items) run by
// `pixelmill run` in embedded mode against the provider's emulator at its documented limit, with
// generation compressed (--time-scale), the manifest naming no limit at all: Replicate's 600
// creates a minute, BFL's 24 active tasks, fal's 40 in progress. Measured from outside:
//   wall / bound   the run's start to finish (summary.json) over what the limit allows: the items
//                  at the limit's pace plus one mean generation (rate), or the items' generations
//                  in waves of the limit (concurrency)
//   calls / image  what the emulator answered, submits, lookups and results, per image stored
//   lost           results the provider deleted before anyone fetched them (retention compressed
//                  with the clock) and prompts submitted twice, from the emulator's own counts
//   ready_to_fetch_share  for each result fetched, its ready-to-first-fetch over its retention
//                  (max and p99), from the emulator's stats
// The same providers through the chaos suite's kills and restarts: bench/providers-chaos.ts.
//
// A run's wall time spreads several percent from one run to the next on this machine (timers,
// workflow tasks and 2 cores shared by the emulator, the worker and the dev server): --repeat N
// runs each provider N times and reports the median, min and max beside each run, and the
// targets against the median.
//
//   npm run build && node dist/bench/providers.js [--provider fal,replicate,bfl] [--items 2000]
//       [--time-scale 0.2] [--webhooks] [--repeat 1] [--json out.json]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { median, round, target, type Target } from './figures.js';
import {
  cleanUpAll,
  cleanUpOnSignals,
  startDevServerIn,
  stopRegisteredDevServer,
  timeCli,
} from './processes.js';
import {
  apiCalls,
  boundSeconds,
  generationSeconds,
  lostToRetention,
  retentionShareOf,
  SETUPS,
  tasksAt,
  type EmulatorCounts,
  type Provider,
  type ProviderSetup,
  type RetentionShareFigure,
  type TaskTruth,
} from './providers-setups.js';

interface ProviderFigures {
  provider: Provider;
  items: number;
  completed: number;
  images: number;
  wall_s: number;
  bound_s: number;
  wall_over_bound: number;
  calls_per_image: number;
  calls_by_route: Record<string, number>;
  /** 429s the provider answered (a rate or a concurrency over its limit). */
  refused: number;
  results_deleted_unfetched: number;
  /**
   * From the emulator's record of every task: how many were at the provider on average from the
   * run's first submit to its last result (submit to ready: what holds BFL's slots, fal's queue and
   * slots), and a task's mean time there, against the mean generation the bound assumes.
   */
  at_provider: { mean_tasks: number; mean_s: number; bound_mean_s: number };
  /**
   * Where the limit counts a task from its submit (BFL), the bound at the time the provider held
   * each task (`at_provider.mean_s`: its FIFO queue makes a task wait behind those submitted before
   * it, longer than the configured queue times' mean), and the wall time over it.
   */
  held_bound_s?: number;
  wall_over_held_bound?: number;
  /** For each result fetched, ready to first fetch over the provider's retention (max, p99). */
  ready_to_fetch_share: RetentionShareFigure;
  duplicate_submits: number;
  targets: Target[];
}

async function benchProvider(
  provider: Provider,
  options: { items: number; timeScale: number; webhooks: boolean; dir: string },
): Promise<ProviderFigures> {
  const setup = SETUPS[provider];
  const dir = mkdtempSync(join(options.dir, `${provider}-`));
  const secret = 'bench-webhook-secret';
  const emulator = await setup.start(options.timeScale);
  const { env: serverEnv } = await startDevServerIn(join(dir, '.pixelmill'));
  try {
    const manifest = join(dir, 'catalog.yaml');
    writeFileSync(
      manifest,
      [
        `name: bench-${provider}`,
        `api: { provider: ${provider}, api_key_env: ${setup.keyEnv} }`,
        `defaults: { model: "${setup.model}", size: "1:1" }`,
        // Every check on: what a user runs. Nothing about the limit is said.
        'output: ./out',
        ...(options.webhooks ? ['webhooks: { enabled: true }'] : []),
        'items:',
        ...Array.from(
          { length: options.items },
          (_, i) => `  - { id: item-${i}, prompt: "bench product ${i}" }`,
        ),
      ].join('\n'),
    );
    const { code, stderr } = await timeCli(['run', manifest, '--no-progress'], {
      cwd: dir,
      env: {
        ...process.env,
        ...serverEnv,
        PIXELMILL_API_BASE_URL: emulator.url,
        [setup.keyEnv]: setup.key,
        PIXELMILL_WEBHOOK_SECRET: secret,
        ...(provider === 'fal' ? { PIXELMILL_FAL_JWKS_URL: `${emulator.url}/.well-known/jwks.json` } : {}),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    if (code !== 0)
      process.stderr.write(`pixelmill run on ${provider} exited ${code}:\n${stderr.slice(-4000)}\n`);
    const summary = JSON.parse(readFileSync(join(dir, 'out', 'summary.json'), 'utf8')) as {
      counts: { completed: number };
      images: number;
      started_at: string;
      finished_at: string;
    };
    // Every prompt differs: submits beyond the first of each are duplicates.
    const tasks = await tasksAt(emulator.url, setup);
    const duplicates = tasks.length - new Set(tasks.map((task) => task.prompt)).size;
    const figures = figuresOf(
      provider,
      setup,
      options,
      summary,
      emulator.stats() as EmulatorCounts,
      duplicates,
    );
    const at = atProvider(tasks, generationSeconds(setup, options.timeScale));
    if (!setup.heldFromSubmit) return { ...figures, at_provider: at };
    const heldBound = boundSeconds(setup, options.items, at.mean_s);
    const overHeld = round(figures.wall_s / heldBound, 3);
    return {
      ...figures,
      at_provider: at,
      held_bound_s: round(heldBound, 1),
      wall_over_held_bound: overHeld,
      targets: [...figures.targets, target('wall / bound at the time held', overHeld, 1.1)],
    };
  } finally {
    await emulator.close();
    await stopRegisteredDevServer(join(dir, '.pixelmill'));
    rmSync(dir, { recursive: true, force: true });
  }
}

function atProvider(tasks: TaskTruth[], boundMeanS: number): ProviderFigures['at_provider'] {
  const spans = tasks.flatMap((task) =>
    task.readyAtMs === null ? [] : [{ from: task.submittedAtMs, to: task.readyAtMs }],
  );
  const first = Math.min(...spans.map((span) => span.from));
  const last = Math.max(...spans.map((span) => span.to));
  const heldMs = spans.reduce((sum, span) => sum + span.to - span.from, 0);
  return {
    mean_tasks: round(heldMs / Math.max(1, last - first), 2),
    mean_s: round(heldMs / Math.max(1, spans.length) / 1000, 3),
    bound_mean_s: round(boundMeanS, 3),
  };
}

function figuresOf(
  provider: Provider,
  setup: ProviderSetup,
  options: { items: number; timeScale: number; webhooks: boolean },
  summary: { counts: { completed: number }; images: number; started_at: string; finished_at: string },
  stats: EmulatorCounts,
  duplicates: number,
): Omit<ProviderFigures, 'at_provider' | 'held_bound_s' | 'wall_over_held_bound'> {
  const generationS = generationSeconds(setup, options.timeScale);
  const wall = (Date.parse(summary.finished_at) - Date.parse(summary.started_at)) / 1000;
  const bound = boundSeconds(setup, options.items, generationS);
  const calls = apiCalls(stats);
  const images = summary.images;
  const callsPerImage = images > 0 ? calls.total / images : 0;
  const lost = lostToRetention(stats);
  const wallOverBound = round(wall / bound, 3);
  return {
    provider,
    items: options.items,
    completed: summary.counts.completed,
    images,
    wall_s: round(wall, 1),
    bound_s: round(bound, 1),
    wall_over_bound: wallOverBound,
    calls_per_image: round(callsPerImage, 3),
    calls_by_route: calls.byRoute,
    refused: calls.refused,
    results_deleted_unfetched: lost,
    ready_to_fetch_share: retentionShareOf(stats),
    duplicate_submits: duplicates,
    targets: [
      target('wall / bound', wallOverBound, 1.1),
      target('API calls per image', round(callsPerImage, 3), options.webhooks ? 1.1 : setup.maxCallsPolling),
      target('results lost to retention', lost, 0),
    ],
  };
}

interface Spread {
  median: number;
  min: number;
  max: number;
}

/** N runs of one provider: the spread of each figure, the targets against the medians. */
interface RepeatedFigures {
  provider: Provider;
  runs: number;
  wall_over_bound: Spread;
  calls_per_image: Spread;
  refused: Spread;
  /** Summed over the runs: each must be 0. */
  results_deleted_unfetched: number;
  duplicate_submits: number;
  targets: Target[];
}

function spreadOf(values: number[]): Spread {
  return { median: round(median(values), 3), min: Math.min(...values), max: Math.max(...values) };
}

function repeated(runs: ProviderFigures[], webhooks: boolean): RepeatedFigures {
  const provider = runs[0]!.provider;
  const sum = (pick: (figures: ProviderFigures) => number): number =>
    runs.reduce((total, figures) => total + pick(figures), 0);
  const wall = spreadOf(runs.map((figures) => figures.wall_over_bound));
  const calls = spreadOf(runs.map((figures) => figures.calls_per_image));
  const lost = sum((figures) => figures.results_deleted_unfetched);
  return {
    provider,
    runs: runs.length,
    wall_over_bound: wall,
    calls_per_image: calls,
    refused: spreadOf(runs.map((figures) => figures.refused)),
    results_deleted_unfetched: lost,
    duplicate_submits: sum((figures) => figures.duplicate_submits),
    targets: [
      target('wall / bound (median)', wall.median, 1.1),
      target('API calls per image (median)', calls.median, webhooks ? 1.1 : SETUPS[provider].maxCallsPolling),
      target('results lost to retention (all runs)', lost, 0),
    ],
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      provider: { type: 'string', default: 'fal,replicate,bfl' },
      items: { type: 'string', default: '2000' },
      'time-scale': { type: 'string', default: '0.2' },
      webhooks: { type: 'boolean', default: false },
      repeat: { type: 'string', default: '1' },
      json: { type: 'string' },
    },
  });
  cleanUpOnSignals();
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-bench-providers-'));
  const results: (ProviderFigures | RepeatedFigures)[] = [];
  const repeat = Math.max(1, Math.floor(Number(values.repeat)) || 1);
  try {
    for (const provider of values.provider.split(',') as Provider[]) {
      const runs: ProviderFigures[] = [];
      for (let run = 0; run < repeat; run++) {
        const figures = await benchProvider(provider, {
          items: Number(values.items),
          timeScale: Number(values['time-scale']),
          webhooks: values.webhooks,
          dir,
        });
        runs.push(figures);
        process.stdout.write(`${JSON.stringify(figures)}\n`);
      }
      const reported = repeat === 1 ? runs[0]! : repeated(runs, values.webhooks);
      if (repeat > 1) process.stdout.write(`${JSON.stringify(reported)}\n`);
      results.push(reported);
    }
  } finally {
    await cleanUpAll();
    rmSync(dir, { recursive: true, force: true });
  }
  if (values.json) writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
}

await main();
