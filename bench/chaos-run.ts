// One chaos run, end to end: the emulator (in this process, so its ground truth and fault counters
// are at hand) injecting every fault, a Temporal (a persisted dev server, or a real cluster handed
// over), `pixelmill worker` and `pixelmill webhook-server` processes, and `pixelmill run` starting
// the catalog as a user would. While it runs, workers are SIGKILLed or cut off from the frontend
// and the Temporal side fails at the scheduled shares of the downloads; then the run is audited
// (chaos-audit.ts). Used by `npm run chaos` (bench/chaos.ts) and, smaller and with a fixed
// schedule, by test/chaos.test.ts (dev server) and test/cluster.test.ts (the cluster).
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runProgressQuery, runWorkflowId, shardProgressQuery } from '../common/names.js';
import type { ItemCounts } from '../common/types.js';
import {
  startEmulator,
  type EmulatorStats,
  type InjectedFault,
  type RunningEmulator,
} from '../emulator/index.js';
import { bucketFiles, folderFiles } from './audit-files.js';
import { apiCallCounts, downloadsServed } from './catalog-audit.js';
import { auditChaosRun, type ChaosAudit } from './chaos-audit.js';
import { ChaosCluster } from './chaos-cluster.js';
import { writeChaosDiagnosis } from './chaos-diagnosis.js';
import {
  CHAOS_API_KEY,
  CHAOS_MAX_ATTEMPTS,
  CHAOS_RUN_NAME,
  calmEmulatorConfig,
  chaosEmulatorConfig,
  chaosItems,
  disruptionSchedule,
  writeChaosManifest,
  type ChaosOptions,
  type ChaosOutput,
  type Disruption,
  type DisruptionKind,
} from './chaos-config.js';
import { withClient, type ServerFaultKind, type TemporalEndpoint } from './chaos-temporal.js';
import { exited, spawnNode } from './processes.js';
import { startS3Server, type S3TestServer } from './s3-server.js';

export interface DisruptionRecord {
  kind: DisruptionKind;
  at_share: number;
  /** Seconds after the run started; null when the run finished before its moment came. */
  at_s: number | null;
  worker?: number;
  /** For a restart: from the stop until the server answered again; for an outage or cut-off, its length. */
  down_s?: number;
  /** For a cut-off: the worker's connections to the frontend it froze, and those made meanwhile. */
  connections?: { open_at_cut: number; accepted_while_cut: number };
  /**
   * For a cut-off: completions the worker sent once reconnected that Temporal refused, their
   * tasks having been timed out and handed to another worker meanwhile (counted at the run's end).
   */
  completions_refused?: number;
}

export interface ChaosResult {
  benchmark: 'pixelmill-chaos';
  date: string;
  machine: { cpus: number; node: string };
  options: {
    items: number;
    kills: number;
    seed: number;
    workers: number;
    restart_server: boolean;
    shared_nothing: boolean;
    /** `dev-server`, or the address of the cluster handed over. */
    temporal: string;
    calm_api: boolean;
    time_scale: number;
  };
  finished: boolean;
  wall_s: number;
  disruptions: DisruptionRecord[];
  /** Processes that exited although nobody killed them, restarted by the harness. */
  unplanned_restarts: string[];
  faults: Record<InjectedFault | 'http_429' | 'failed_generations', number>;
  /** Webhook attempts by outcome; `gave_up` deliveries were left to polling. */
  webhooks: EmulatorStats['webhooks'];
  /** Every request the emulator answered, by endpoint (all statuses). */
  api_calls: { submit: number; lookup: number; get: number; downloads: number };
  audit: ChaosAudit & { items_stuck: number };
}

const POLL_MS = 1_000;
/** The bucket of a shared-nothing run; its objects are under `<run name>/`. */
const CHAOS_BUCKET = 'chaos';
const CLOSED_CHECK_MS = 3_000;

/** Whether the run workflow has closed; false while it runs or while the server is unreachable. */
async function runClosed(temporal: TemporalEndpoint, runName: string): Promise<boolean> {
  try {
    return await withClient(temporal, async (client) => {
      const description = await client.workflow.getHandle(runWorkflowId(runName)).describe();
      return description.status.name !== 'RUNNING';
    });
  } catch {
    return false;
  }
}

/** Items not in a final state, from the run's and its running shards' progress queries. */
export async function unfinishedItems(
  temporal: TemporalEndpoint,
  items: number,
  runName = CHAOS_RUN_NAME,
): Promise<number> {
  const final = (counts: ItemCounts): number =>
    counts.completed + counts.failed + counts.cancelled + counts.expired + counts.skipped;
  try {
    return await withClient(temporal, async (client) => {
      const progress = await client.workflow.getHandle(runWorkflowId(runName)).query(runProgressQuery);
      let done = final(progress.finished.counts);
      for (const shard of progress.runningShards)
        done += final((await client.workflow.getHandle(shard).query(shardProgressQuery)).counts);
      return items - done;
    });
  } catch {
    return items;
  }
}

/**
 * Follows the run by the emulator's download count (`downloads`: images served whole so far) and,
 * every few seconds, its workflow's state.
 */
export class RunWatch {
  private finished = false;
  private checkedAt = 0;

  constructor(
    private readonly downloads: () => number,
    private readonly temporal: TemporalEndpoint,
    private readonly imagesExpected: number,
    private readonly deadline: number,
    private readonly runName = CHAOS_RUN_NAME,
  ) {}

  /** Waits until `share` of the images were downloaded; false if the run ended (or timed out) first. */
  async reach(share: number): Promise<boolean> {
    while (this.downloads() < share * this.imagesExpected) {
      if (this.finished || Date.now() >= this.deadline) return false;
      if (Date.now() - this.checkedAt >= CLOSED_CHECK_MS) {
        this.checkedAt = Date.now();
        this.finished = await runClosed(this.temporal, this.runName);
      }
      await sleep(100);
    }
    return !this.finished;
  }

  /** Waits until the run has closed; false if the deadline came first. */
  async closed(): Promise<boolean> {
    while (!this.finished && Date.now() < this.deadline) {
      this.finished = await runClosed(this.temporal, this.runName);
      if (!this.finished) await sleep(POLL_MS);
    }
    return this.finished;
  }
}

const SERVER_FAULTS: Record<ServerFaultKind, string> = {
  'restart-server': 'stopping the Temporal dev server and starting it again',
  'restart-history': "SIGKILL of the cluster's history service, started again",
  'restart-postgres': "restarting the cluster's PostgreSQL (fast shutdown: every session cut)",
};

/**
 * Plays the disruption schedule on the cluster as the run reaches each event's share of its
 * images (`downloaded`: images served whole so far). An event whose moment the run never reached
 * is recorded with `at_s: null`. Each event waits for the one before, except a cut-off, which
 * lasts `cutOffMs` while the next events come (resolved before this returns).
 */
export async function playDisruptions({
  schedule,
  watch,
  cluster,
  downloaded,
  seconds,
  webhookOutageMs,
  cutOffMs = 0,
  log,
}: {
  schedule: readonly Disruption[];
  watch: RunWatch;
  cluster: ChaosCluster;
  downloaded: () => number;
  /** Seconds since the run started. */
  seconds: () => number;
  webhookOutageMs: number;
  cutOffMs?: number;
  log: (line: string) => void;
}): Promise<DisruptionRecord[]> {
  const disruptions: DisruptionRecord[] = [];
  const cutOffs: Promise<void>[] = [];
  const tenths = (ms: number): number => Math.round(ms / 100) / 10;
  for (const event of schedule) {
    const record: DisruptionRecord = {
      kind: event.kind,
      at_share: Math.round(event.atShare * 1000) / 1000,
      at_s: null,
    };
    if (event.kind === 'kill' || event.kind === 'cut-off') record.worker = event.worker;
    disruptions.push(record);
    if (!(await watch.reach(event.atShare))) continue;
    record.at_s = seconds();
    const images = `(${downloaded()} images downloaded)`;
    if (event.kind === 'kill') {
      log(`SIGKILL worker ${event.worker} at ${record.at_s} s ${images}`);
      await cluster.killWorker(event.worker);
    } else if (event.kind === 'cut-off') {
      log(
        `worker ${event.worker} cut off from the frontend for ${cutOffMs} ms at ${record.at_s} s ${images}`,
      );
      record.down_s = tenths(cutOffMs);
      cutOffs.push(
        cluster.cutOff(event.worker, cutOffMs).then(({ openAtCut, acceptedWhileCut }) => {
          record.connections = { open_at_cut: openAtCut, accepted_while_cut: acceptedWhileCut };
          log(`worker ${event.worker} reconnected to the frontend at ${seconds()} s`);
        }),
      );
    } else if (event.kind === 'webhook-outage') {
      log(`webhook receiver down for ${webhookOutageMs} ms at ${record.at_s} s ${images}`);
      await cluster.webhookOutage(webhookOutageMs);
      record.down_s = webhookOutageMs / 1000;
    } else {
      log(`${SERVER_FAULTS[event.kind]} at ${record.at_s} s ${images}`);
      record.down_s = tenths((await cluster.serverFault(event.kind)).downMs);
    }
  }
  await Promise.all(cutOffs);
  return disruptions;
}

/** `pixelmill run chaos.yaml` against the cluster: starts the run and returns (`env` adds to the API's). */
export async function startRunWithCli(
  cli: string,
  cluster: ChaosCluster,
  dir: string,
  file: string,
  storeEnv: NodeJS.ProcessEnv,
): Promise<void> {
  const child = spawnNode([cli, 'run', file, '--no-progress'], {
    cwd: dir,
    env: {
      ...process.env,
      ...storeEnv,
      ...cluster.temporal.env,
      // The manifest names the emulator; the key makes the run's API account the workers'.
      PIXELMILL_API_BASE_URL: '',
      PIXELMILL_API_KEY: CHAOS_API_KEY,
      PIXELMILL_WEBHOOK_URL: '',
    },
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await exited(child);
  if (code !== 0) throw new Error(`pixelmill run exited with code ${code}:\n${output}`);
}

function faultFigures(emulator: RunningEmulator): ChaosResult['faults'] {
  const stats = emulator.stats();
  const http429 = Object.values(stats.requests).reduce((sum, byStatus) => sum + (byStatus['429'] ?? 0), 0);
  return {
    ...emulator.injectedFaults(),
    http_429: http429,
    failed_generations: stats.tasks.failed,
  };
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const { log } = options;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'pixelmill-chaos-'));
  const calmApi = options.calmApi ?? false;
  const timeScale = options.timeScale ?? 0.05;
  const items = chaosItems(options.items, options.seed, !calmApi);
  const imagesExpected = items.reduce((sum, item) => sum + item.n, 0);
  const schedule =
    options.schedule ??
    disruptionSchedule({
      ...options,
      ...(options.temporal
        ? { serverFaults: Object.keys(options.temporal.faults) as ServerFaultKind[] }
        : {}),
    });
  const emulator = await startEmulator({
    config: calmApi
      ? calmEmulatorConfig(options.seed, timeScale)
      : chaosEmulatorConfig(options.seed, options.faults, timeScale),
  });
  let cluster: ChaosCluster | undefined;
  let s3: S3TestServer | undefined;
  /** A folder given by the caller is always kept; a temp folder only when the run did not finish. */
  let keep = options.dir !== undefined;
  try {
    let output: ChaosOutput = './out';
    let files = folderFiles(join(dir, 'out'));
    if (options.sharedNothing) {
      s3 = await startS3Server();
      await s3.createBucket(CHAOS_BUCKET);
      output = {
        dir: `s3://${CHAOS_BUCKET}/${CHAOS_RUN_NAME}`,
        endpoint: s3.endpoint,
        force_path_style: true,
      };
      files = bucketFiles(s3.client, CHAOS_BUCKET, CHAOS_RUN_NAME);
    }
    const storeEnv = s3?.env ?? {};
    const cutOff = schedule.filter((event) => event.kind === 'cut-off').map((event) => event.worker);
    const deployment = { ...(options.sharedNothing ? { hidden: dir, env: storeEnv } : {}), cutOff };
    cluster = await ChaosCluster.start(dir, options.cli, emulator.url, log, deployment, options.temporal);
    const webhookUrl = await cluster.startWebhookServer();
    // At once: each takes seconds of CPU to start, more on a loaded machine.
    await Promise.all(Array.from({ length: options.workers }, (_, i) => cluster!.startWorker(i)));
    const manifest = writeChaosManifest(dir, items, emulator.url, webhookUrl, output);
    log(`chaos: ${items.length} items, ${imagesExpected} images; schedule ${JSON.stringify(schedule)}`);

    const started = Date.now();
    const deadline = started + options.deadlineMs;
    await startRunWithCli(options.cli, cluster, dir, manifest, storeEnv);
    const seconds = (): number => Math.round((Date.now() - started) / 100) / 10;
    const watch = new RunWatch(() => downloadsServed(emulator), cluster.temporal, imagesExpected, deadline);
    const disruptions = await playDisruptions({
      schedule,
      watch,
      cluster,
      downloaded: () => downloadsServed(emulator),
      seconds,
      webhookOutageMs: options.webhookOutageMs,
      cutOffMs: options.cutOffMs ?? 0,
      log: (line) => log(`chaos: ${line}`),
    });
    const finished = await watch.closed();
    const wallS = seconds();
    const refused = cluster.completionsRefusedAfterCutOffs();
    disruptions
      .filter((event) => event.kind === 'cut-off' && event.at_s !== null)
      .forEach((event, i) => (event.completions_refused = refused[i]));
    log(`chaos: run ${finished ? 'finished' : 'NOT finished'} after ${wallS} s; auditing`);
    const stuck = finished ? 0 : await unfinishedItems(cluster.temporal, items.length);
    if (!finished) {
      keep = true;
      const diagnosis = await writeChaosDiagnosis(cluster.temporal, CHAOS_RUN_NAME, dir);
      const logs = cluster.writeLogs(dir);
      log(
        `chaos: kept ${dir}: what the run waited for in ${diagnosis}, process logs in ${logs}, Temporal state in ${cluster.temporal.stateDir}`,
      );
    } else if (options.dir !== undefined) {
      // A folder asked for is kept: the processes' logs too, for a look at what each went through.
      log(`chaos: process logs in ${cluster.writeLogs(dir)}`);
    }
    const unplanned = [...cluster.events.workerExits, ...cluster.events.webhookServerExits];
    await cluster.stop();
    // Before the audit, whose own downloads would count.
    const calls = apiCallCounts(emulator.stats());
    const faults = faultFigures(emulator);
    const audit = await auditChaosRun({
      items,
      files,
      emulator,
      maxAttempts: CHAOS_MAX_ATTEMPTS,
      startedAtMs: started,
    });
    return {
      benchmark: 'pixelmill-chaos',
      date: new Date().toISOString(),
      machine: { cpus: availableParallelism(), node: process.version },
      options: {
        items: options.items,
        kills: options.kills,
        seed: options.seed,
        workers: options.workers,
        restart_server: options.restartServer,
        shared_nothing: options.sharedNothing ?? false,
        temporal: options.temporal ? options.temporal.address : 'dev-server',
        calm_api: calmApi,
        time_scale: timeScale,
      },
      finished,
      wall_s: wallS,
      disruptions,
      unplanned_restarts: unplanned,
      faults,
      api_calls: calls,
      webhooks: emulator.stats().webhooks,
      audit: { ...audit, items_stuck: stuck },
    };
  } finally {
    await cluster?.stop().catch(() => undefined);
    await emulator.close();
    await s3?.stop();
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}
