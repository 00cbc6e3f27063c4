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
//
//   npm run build && node dist/bench/providers.js [--provider fal,replicate,bfl] [--items 2000]
//       [--time-scale 0.2] [--webhooks] [--json out.json]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startBflEmulator, DEMO_BFL_KEY, DEFAULT_BFL_CONFIG } from '../emulator/bfl/index.js';
import { startFalEmulator, DEMO_FAL_KEY, DEFAULT_FAL_CONFIG } from '../emulator/fal/index.js';
import {
  startReplicateEmulator,
  DEMO_REPLICATE_TOKEN,
  DEFAULT_REPLICATE_CONFIG,
} from '../emulator/replicate/index.js';
import type { StartedEmulator } from '../emulator/providers.js';
import { round, target, type Target } from './figures.js';
import {
  cleanUpAll,
  cleanUpOnSignals,
  exited,
  spawnCli,
  startDevServerIn,
  stopRegisteredDevServer,
} from './processes.js';

type Provider = 'fal' | 'replicate' | 'bfl';

interface ProviderSetup {
  keyEnv: string;
  key: string;
  /** The model the catalog uses, and its generation seconds in the emulator (before compression). */
  model: string;
  seconds: readonly [number, number];
  queueSeconds: readonly [number, number];
  /**
   * What the documented limit allows: a rate (items per second, after a burst the provider
   * allows at once) or a concurrency (at once).
   */
  limit: { perSecond: number; burst: number } | { atOnce: number };
  /** The calls per image issue 39 allows this provider without webhooks. */
  maxCallsPolling: number;
  /** The emulator's ground truth of what it accepted, one JSON line each with its `prompt`. */
  groundTruth: string;
  start(timeScale: number, webhookSecret: string): Promise<StartedEmulator>;
}

const mean = ([min, max]: readonly [number, number]): number => (min + max) / 2;
const FAL_MODEL = DEFAULT_FAL_CONFIG.models['fal-ai/flux/dev']!;

const SETUPS: Record<Provider, ProviderSetup> = {
  fal: {
    keyEnv: 'FAL_KEY',
    key: DEMO_FAL_KEY,
    model: 'fal-ai/flux/dev',
    seconds: FAL_MODEL.seconds,
    queueSeconds: DEFAULT_FAL_CONFIG.generation.queue_seconds,
    limit: { atOnce: 40 },
    maxCallsPolling: 3.5,
    groundTruth: '/_emulator/requests',
    start: (timeScale) => startFalEmulator({ config: { time_scale: timeScale, port: 0, concurrency: 40 } }),
  },
  replicate: {
    keyEnv: 'REPLICATE_API_TOKEN',
    key: DEMO_REPLICATE_TOKEN,
    model: 'black-forest-labs/flux-schnell',
    seconds: DEFAULT_REPLICATE_CONFIG.generation.run_seconds,
    queueSeconds: DEFAULT_REPLICATE_CONFIG.generation.queue_seconds,
    // "Short bursts allowed": the emulator's bucket holds a minute's worth.
    limit: { perSecond: 600 / 60, burst: DEFAULT_REPLICATE_CONFIG.limits.create.burst },
    maxCallsPolling: 1.5,
    groundTruth: '/_emulator/predictions',
    start: (timeScale) => startReplicateEmulator({ config: { time_scale: timeScale, port: 0 } }),
  },
  bfl: {
    keyEnv: 'BFL_API_KEY',
    key: DEMO_BFL_KEY,
    model: 'flux-pro-1.1',
    seconds: DEFAULT_BFL_CONFIG.models['flux-pro-1.1']!.seconds,
    queueSeconds: DEFAULT_BFL_CONFIG.generation.queue_seconds,
    limit: { atOnce: 24 },
    maxCallsPolling: 3,
    groundTruth: '/_emulator/tasks',
    start: (timeScale) => startBflEmulator({ config: { time_scale: timeScale, port: 0 } }),
  },
};

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
  duplicate_submits: number;
  targets: Target[];
}

/** Seconds the documented limit needs for `items` of mean generation `generationS`. */
function boundSeconds(setup: ProviderSetup, items: number, generationS: number): number {
  if ('perSecond' in setup.limit)
    return Math.max(0, items - setup.limit.burst) / setup.limit.perSecond + generationS;
  return Math.ceil(items / setup.limit.atOnce) * generationS;
}

async function benchProvider(
  provider: Provider,
  options: { items: number; timeScale: number; webhooks: boolean; dir: string },
): Promise<ProviderFigures> {
  const setup = SETUPS[provider];
  const dir = mkdtempSync(join(options.dir, `${provider}-`));
  const secret = 'bench-webhook-secret';
  const emulator = await setup.start(options.timeScale, secret);
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
    const cli = spawnCli(['run', manifest, '--no-progress'], {
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
    let log = '';
    cli.stderr?.on('data', (chunk: Buffer) => void (log = (log + chunk.toString()).slice(-4000)));
    const code = await exited(cli);
    if (code !== 0) process.stderr.write(`pixelmill run on ${provider} exited ${code}:\n${log}\n`);
    const summary = JSON.parse(readFileSync(join(dir, 'out', 'summary.json'), 'utf8')) as {
      counts: { completed: number };
      images: number;
      started_at: string;
      finished_at: string;
    };
    const duplicates = await duplicateSubmits(`${emulator.url}${setup.groundTruth}`);
    return figuresOf(provider, setup, options, summary, emulator.stats() as EmulatorCounts, duplicates);
  } finally {
    await emulator.close();
    await stopRegisteredDevServer(join(dir, '.pixelmill'));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What every provider emulator's stats have in common, and the retention counts each names its way. */
interface EmulatorCounts {
  requests: Record<string, Record<string, number>>;
  /** fal: results and CDN images deleted before anyone fetched them. */
  retention?: { results_deleted_unfetched?: number; images_deleted_undownloaded?: number };
  /** Replicate: output files removed (its hour) before anyone downloaded them. */
  outputs?: { deleted_before_download?: number };
  /** BFL: sample URLs expired (their ten minutes) before anyone downloaded them. */
  samples?: { expired_before_download?: number };
}

/** Submits beyond the first of each prompt, from the emulator's ground truth (every prompt differs). */
async function duplicateSubmits(url: string): Promise<number> {
  const text = await (await fetch(url)).text();
  const prompts = text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => (JSON.parse(line) as { prompt?: string }).prompt);
  return prompts.length - new Set(prompts).size;
}

function figuresOf(
  provider: Provider,
  setup: ProviderSetup,
  options: { items: number; timeScale: number; webhooks: boolean },
  summary: { counts: { completed: number }; images: number; started_at: string; finished_at: string },
  stats: EmulatorCounts,
  duplicates: number,
): ProviderFigures {
  const generationS = (mean(setup.seconds) + mean(setup.queueSeconds)) * options.timeScale;
  const wall = (Date.parse(summary.finished_at) - Date.parse(summary.started_at)) / 1000;
  const bound = boundSeconds(setup, options.items, generationS);
  const byRoute: Record<string, number> = {};
  let calls = 0;
  let refused = 0;
  for (const [route, byStatus] of Object.entries(stats.requests)) {
    // Result images come from the provider's file host: downloads, not API calls.
    if (/results|delivery|media|files/.test(route) && !route.startsWith('GET /v1/predictions')) continue;
    const count = Object.values(byStatus).reduce((sum, n) => sum + n, 0);
    byRoute[route] = count;
    calls += count;
    refused += byStatus['429'] ?? 0;
  }
  const images = summary.images;
  const callsPerImage = images > 0 ? calls / images : 0;
  const lost =
    (stats.retention?.results_deleted_unfetched ?? 0) +
    (stats.retention?.images_deleted_undownloaded ?? 0) +
    (stats.outputs?.deleted_before_download ?? 0) +
    (stats.samples?.expired_before_download ?? 0);
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
    calls_by_route: byRoute,
    refused,
    results_deleted_unfetched: lost,
    duplicate_submits: duplicates,
    targets: [
      target('wall / bound', wallOverBound, 1.1),
      target('API calls per image', round(callsPerImage, 3), options.webhooks ? 1.1 : setup.maxCallsPolling),
      target('results lost to retention', lost, 0),
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
      json: { type: 'string' },
    },
  });
  cleanUpOnSignals();
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-bench-providers-'));
  const results: ProviderFigures[] = [];
  try {
    for (const provider of values.provider.split(',') as Provider[]) {
      const figures = await benchProvider(provider, {
        items: Number(values.items),
        timeScale: Number(values['time-scale']),
        webhooks: values.webhooks,
        dir,
      });
      results.push(figures);
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    }
  } finally {
    await cleanUpAll();
    rmSync(dir, { recursive: true, force: true });
  }
  if (values.json) writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
}

await main();
