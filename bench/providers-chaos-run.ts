// One provider's catalog through the chaos suite (issue 39): its emulator in this process at the
// documented limit, with the chaos faults in its own knobs and generation compressed, a persisted
// Temporal dev server, `pixelmill worker` processes serving the provider's key, and `pixelmill run`
// starting the catalog as a user would, polling (no webhooks), no limit named in the manifest.
// Workers are SIGKILLed and the dev server restarted at the chaos schedule's shares of the images
// downloaded (bench/chaos-config.ts, the same draws as `npm run chaos`), then the run is audited
// (bench/providers-chaos-audit.ts) and measured: wall, calls per image, results lost to retention
// and, from the emulator's stats, how close to its retention each result was fetched.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DEFAULTS } from '../manifest/normalize.js';
import { folderFiles } from './audit-files.js';
import { ChaosCluster } from './chaos-cluster.js';
import { writeChaosDiagnosis } from './chaos-diagnosis.js';
import { CHAOS_RUN_NAME, disruptionSchedule } from './chaos-config.js';
import {
  playDisruptions,
  RunWatch,
  startRunWithCli,
  unfinishedItems,
  type DisruptionRecord,
} from './chaos-run.js';
import { round } from './figures.js';
import { auditProviderChaos, type ChaosItemOf, type ProviderChaosAudit } from './providers-chaos-audit.js';
import {
  apiCalls,
  boundSeconds,
  generationSeconds,
  imagesDownloaded,
  lostToRetention,
  retentionShareOf,
  SETUPS,
  tasksAt,
  type EmulatorCounts,
  type Provider,
  type RetentionShareFigure,
} from './providers-setups.js';

export interface ProviderChaosOptions {
  provider: Provider;
  items: number;
  kills: number;
  seed: number;
  workers: number;
  restartServer: boolean;
  /** Emulated seconds times this: generation and retention compressed alike. */
  timeScale: number;
  /** Inject the chaos faults (5xx, cut-off downloads, failed generations) beside the kills. */
  faults: boolean;
  deadlineMs: number;
  cli: string;
  /** A folder to work in, kept (a fresh temp folder when absent, kept only if the run did not finish). */
  dir?: string;
  log: (line: string) => void;
}

export interface ProviderChaosResult {
  benchmark: 'pixelmill-providers-chaos';
  provider: Provider;
  date: string;
  machine: { cpus: number; node: string };
  options: Omit<ProviderChaosOptions, 'cli' | 'dir' | 'log' | 'provider'>;
  finished: boolean;
  /** The run's start (the CLI started) to its workflow closing, seconds. */
  wall_s: number;
  bound_s: number;
  disruptions: DisruptionRecord[];
  /** Kills that happened (the run had not ended before their moment). */
  kills_done: number;
  restart_done: boolean;
  unplanned_restarts: string[];
  calls: { per_image: number; by_route: Record<string, number>; refused_429: number };
  /** What the emulator counted as deleted by retention before anyone fetched it, at the end. */
  lost_to_retention: number;
  ready_to_fetch_share: RetentionShareFigure;
  faults: Record<string, number>;
  audit: ProviderChaosAudit & { items_stuck: number };
}

function writeManifest(dir: string, provider: Provider, url: string, items: ChaosItemOf[]): string {
  const setup = SETUPS[provider];
  const manifest = {
    name: CHAOS_RUN_NAME,
    description: `written by the providers chaos run (bench/providers-chaos.ts) for ${provider}`,
    api: { provider, base_url: url, api_key_env: setup.keyEnv },
    defaults: { model: setup.model, size: '1:1' },
    // No limit and no retry policy: pixelmill finds the provider's limit, the defaults retry.
    output: './out',
    items,
  };
  const file = join(dir, 'chaos.yaml');
  writeFileSync(file, stringify(manifest));
  return file;
}

function chaosItemsOf(provider: Provider, count: number, seed: number): ChaosItemOf[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `sku-${String(i).padStart(5, '0')}`,
    prompt: `chaos ${seed} ${provider} product ${i}: a linen armchair, studio light`,
  }));
}

export async function runProviderChaos(options: ProviderChaosOptions): Promise<ProviderChaosResult> {
  const { log, provider } = options;
  const setup = SETUPS[provider];
  if (options.dir) mkdirSync(options.dir, { recursive: true });
  const dir = options.dir
    ? mkdtempSync(join(options.dir, `${provider}-`))
    : mkdtempSync(join(tmpdir(), `pixelmill-chaos-${provider}-`));
  const items = chaosItemsOf(provider, options.items, options.seed);
  const schedule = disruptionSchedule({ ...options, webhookOutageMs: 0 });
  const emulator = await setup.start(options.timeScale, {
    seed: options.seed,
    ...(options.faults ? setup.chaosFaults : {}),
  });
  const stats = (): EmulatorCounts => emulator.stats() as EmulatorCounts;
  let cluster: ChaosCluster | undefined;
  let keep = options.dir !== undefined;
  try {
    cluster = await ChaosCluster.start(dir, options.cli, emulator.url, log, {
      apiKey: { env: setup.keyEnv, value: setup.key },
    });
    for (let i = 0; i < options.workers; i++) await cluster.startWorker(i);
    const manifest = writeManifest(dir, provider, emulator.url, items);
    log(`chaos ${provider}: ${items.length} items; schedule ${JSON.stringify(schedule)}`);

    const started = Date.now();
    const deadline = started + options.deadlineMs;
    await startRunWithCli(options.cli, cluster, dir, manifest, { [setup.keyEnv]: setup.key });
    const seconds = (): number => Math.round((Date.now() - started) / 100) / 10;
    // One image an item: the shares are of the items' images.
    const watch = new RunWatch(() => imagesDownloaded(stats()), cluster.temporal, items.length, deadline);
    // No webhook outage is scheduled: the run polls.
    const disruptions = await playDisruptions({
      schedule,
      watch,
      cluster,
      downloaded: () => imagesDownloaded(stats()),
      seconds,
      webhookOutageMs: 0,
      log: (line) => log(`chaos ${provider}: ${line}`),
    });
    const finished = await watch.closed();
    const wallS = seconds();
    log(`chaos ${provider}: run ${finished ? 'finished' : 'NOT finished'} after ${wallS} s; auditing`);
    const stuck = finished ? 0 : await unfinishedItems(cluster.temporal, items.length);
    if (!finished) {
      keep = true;
      const diagnosis = await writeChaosDiagnosis(cluster.temporal, CHAOS_RUN_NAME, dir);
      log(`chaos ${provider}: kept ${dir}: ${diagnosis}, logs in ${cluster.writeLogs(dir)}`);
    } else if (options.dir !== undefined) {
      // A folder asked for is kept: the processes' logs beside the Temporal state, for a post-mortem.
      log(
        `chaos ${provider}: kept ${dir}: logs in ${cluster.writeLogs(dir)}, Temporal state in ${join(dir, 'temporal')}`,
      );
    }
    const unplanned = [...cluster.events.workerExits, ...cluster.events.webhookServerExits];
    await cluster.stop();
    // Before the audit, whose own downloads would count.
    const end = stats();
    const calls = apiCalls(end);
    const tasks = await tasksAt(emulator.url, setup);
    if (keep)
      writeFileSync(join(dir, 'tasks.ndjson'), tasks.map((task) => `${JSON.stringify(task)}\n`).join(''));
    const audit = await auditProviderChaos({
      items,
      files: folderFiles(join(dir, 'out')),
      tasks,
      maxAttempts: DEFAULTS.retryMaxAttempts,
      startedAtMs: started,
    });
    const happened = disruptions.filter((event) => event.at_s !== null);
    const { cli: _cli, dir: _dir, log: _log, provider: _provider, ...shown } = options;
    return {
      benchmark: 'pixelmill-providers-chaos',
      provider,
      date: new Date().toISOString(),
      machine: { cpus: availableParallelism(), node: process.version },
      options: shown,
      finished,
      wall_s: wallS,
      bound_s: round(boundSeconds(setup, options.items, generationSeconds(setup, options.timeScale)), 1),
      disruptions,
      kills_done: happened.filter((event) => event.kind === 'kill').length,
      restart_done: happened.some((event) => event.kind === 'restart-server'),
      unplanned_restarts: unplanned,
      calls: {
        per_image: audit.completed > 0 ? round(calls.total / audit.completed, 3) : 0,
        by_route: calls.byRoute,
        refused_429: calls.refused,
      },
      lost_to_retention: lostToRetention(end),
      ready_to_fetch_share: retentionShareOf(end),
      faults: (end as { faults?: Record<string, number> }).faults ?? {},
      audit: { ...audit, items_stuck: stuck },
    };
  } finally {
    await cluster?.stop().catch(() => undefined);
    await emulator.close();
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}
