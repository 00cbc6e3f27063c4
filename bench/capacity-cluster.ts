// The capacity phase with Temporal on a real cluster (issue #43): the same run as bench/capacity.ts
// (rate limit 10,000/s, generation 1,000x compressed, so neither binds) on three set-ups, each
// against a fresh emulator, so the Temporal side's CPU per image can be told apart from
// pixelmill's own:
//   dev_server_embedded  the dev server, workers inside `pixelmill run` (the capacity phase today);
//   dev_server_worker    the dev server, workers in a `pixelmill worker` process;
//   cluster_worker       four Temporal services and PostgreSQL (test/support/cluster.ts, the
//                        layout docker-compose.yml ships), workers in a `pixelmill worker` process.
// The two worker-process set-ups differ only in the server; the two dev-server ones only in where
// the workers run. CPU is read from /proc over the CLI's life: each cluster service, PostgreSQL's
// whole process tree (a backend per connection), the dev server, the CLI and the worker. Part of
// the Temporal side's CPU is paid per second, whatever the rate (pollers held open, timers, shard
// and queue housekeeping): before each run with a worker process, the worker polls for a while
// with nothing to do and that is metered too, so that the cost per image can be read beyond it.
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { clusterTools, startTemporalCluster, type ClusterTools } from '../test/support/cluster.js';
import { CAPACITY_TIME_SCALE, UNBOUND_RPS } from './capacity.js';
import { comparePixelmill } from './compare.js';
import { startEmulatorProcess } from './emulator-process.js';
import { apiCallFigures, mapValues, medianOfEach, round } from './figures.js';
import { TreeCpuMeter } from './process-tree.js';
import { ProcessSampler, startDevServerIn, stopRegisteredDevServer } from './processes.js';
import { renderTable } from './report.js';
import { runWithWorkerProcess, type CpuMeter, type WindowCpu, type WorkerRunSpec } from './worker-run.js';

/** As the capacity phase: far more than the rate and generation time need, so neither binds. */
const MAX_IN_FLIGHT = 2_000;
/** The cluster's namespace: the one bench/histories.ts reads, as on the dev server. */
const NAMESPACE = 'default';
/** Seconds the worker polls with no run before each run, metered (the cost of idling). */
const IDLE_SECONDS = 20;

export const SETUPS = ['dev_server_embedded', 'dev_server_worker', 'cluster_worker'] as const;
export type Setup = (typeof SETUPS)[number];

export interface ClusterCapacitySpec {
  dir: string;
  items: number;
  /** Rounds of the three set-ups; the figures are the rounds' medians, the order alternating. */
  rounds: number;
  deadline: number;
  say: (line: string) => void;
}

/** One set-up's figures in one round (or their medians). */
export interface SetupFigures {
  finished: boolean;
  images: number;
  wall_s: number;
  images_per_s: number;
  /** CPU per image by process: pixelmill's, the Temporal side's, and the emulator's. */
  cpu_ms_per_image: {
    pixelmill: number;
    /** `cli` (with the workers when embedded) and `worker`. */
    pixelmill_by_process: Record<string, number>;
    temporal: number;
    /** `dev_server`; or `frontend`, `history`, `matching`, `worker_service` and `postgres` (its tree). */
    temporal_by_process: Record<string, number>;
    emulator: number;
    /** The Temporal side's, less what it spends idling over the run's time: the cost of images. */
    temporal_beyond_idle: number | null;
  };
  /** Cores the Temporal side keeps busy at 100 images/s: its CPU ms per image / 10. */
  temporal_cores_per_100_images_per_s: number;
  /**
   * CPU seconds per second with the worker polling and no run: the Temporal side's processes and
   * the worker (`pixelmill_worker`). Null for embedded workers, which exist only during the run.
   */
  idle_cores_by_process: Record<string, number> | null;
  temporal_idle_cores: number | null;
  peak_rss_mb: Record<string, number>;
  history_events_per_item: number;
  /** API calls the emulator answered per image stored: 2 is one submit and one GET each. */
  api_calls_per_image: number;
  /** The 1-minute load average as the set-up started and as it ended. */
  load_average: { start: number; end: number };
}

export interface ClusterCapacityResult {
  items: number;
  rps: number;
  time_scale: number;
  /** Temporal's version, built from its Go module (scripts/install-temporal-cluster.mjs). */
  cluster_version: string;
  /** Medians over the rounds. */
  setups: Record<Setup, SetupFigures | null>;
  rounds: Record<Setup, SetupFigures | null>[];
}

const msPerImage = (cpuS: number, images: number): number =>
  images > 0 ? round((cpuS * 1000) / images, 2) : 0;
const sum = (values: Record<string, number>): number => Object.values(values).reduce((a, b) => a + b, 0);
const load1 = (): number => round(loadavg()[0]!, 2);

/** The figures of a run, from the CPU seconds of each side's processes. */
function figuresOf(run: {
  finished: boolean;
  images: number;
  wallS: number;
  pixelmillCpuS: Record<string, number>;
  temporalCpuS: Record<string, number>;
  emulatorCpuS: number;
  peakRssMb: Record<string, number>;
  eventsPerItem: number;
  apiCallsPerImage: number;
  loadAtStart: number;
  /** The run's metered window, and the idle one before it (worker processes only). */
  windowS?: number;
  idle?: WindowCpu | null;
}): SetupFigures {
  const perImage = (cpuS: number): number => msPerImage(cpuS, run.images);
  const temporal = perImage(sum(run.temporalCpuS));
  const { idle, windowS } = run;
  const perSecond = (cpuS: number): number => (idle ? round(cpuS / idle.seconds, 4) : 0);
  const idleCores = idle
    ? { ...mapValues(idle.cpu_s.temporal, perSecond), pixelmill_worker: perSecond(idle.cpu_s.worker) }
    : null;
  const temporalIdleCores = idle ? round(sum(idle.cpu_s.temporal) / idle.seconds, 4) : null;
  return {
    finished: run.finished,
    images: run.images,
    wall_s: run.wallS,
    images_per_s: run.wallS > 0 ? round(run.images / run.wallS, 1) : 0,
    cpu_ms_per_image: {
      pixelmill: perImage(sum(run.pixelmillCpuS)),
      pixelmill_by_process: mapValues(run.pixelmillCpuS, perImage),
      temporal,
      temporal_by_process: mapValues(run.temporalCpuS, perImage),
      emulator: perImage(run.emulatorCpuS),
      temporal_beyond_idle:
        temporalIdleCores !== null && windowS !== undefined
          ? perImage(sum(run.temporalCpuS) - temporalIdleCores * windowS)
          : null,
    },
    temporal_cores_per_100_images_per_s: round(temporal / 10, 3),
    idle_cores_by_process: idleCores,
    temporal_idle_cores: temporalIdleCores,
    peak_rss_mb: run.peakRssMb,
    history_events_per_item: run.eventsPerItem,
    api_calls_per_image: run.apiCallsPerImage,
    load_average: { start: run.loadAtStart, end: load1() },
  };
}

type RunOn = Pick<WorkerRunSpec, 'temporal' | 'meterTemporal'>;

/** A run with a `pixelmill worker` process against the server `on` names, on a fresh emulator. */
async function workerSetup(dir: string, spec: ClusterCapacitySpec, on: RunOn): Promise<SetupFigures> {
  const loadAtStart = load1();
  const emulator = await startEmulatorProcess(dir, {
    timeScale: CAPACITY_TIME_SCALE,
    requestsPerSecond: UNBOUND_RPS,
  });
  const emulatorCpu = new ProcessSampler(emulator.pid);
  try {
    const run = await runWithWorkerProcess({
      ...on,
      dir,
      name: 'bench-capacity',
      emulator,
      items: spec.items,
      requestsPerSecond: UNBOUND_RPS,
      maxInFlight: MAX_IN_FLIGHT,
      deadline: spec.deadline,
      idleSeconds: IDLE_SECONDS,
    });
    emulatorCpu.stop();
    const calls = apiCallFigures(await emulator.stats(), run.images);
    return figuresOf({
      finished: run.finished,
      images: run.images,
      wallS: run.wall_s,
      pixelmillCpuS: { cli: run.cpu_s.cli, worker: run.cpu_s.worker },
      temporalCpuS: run.cpu_s.temporal,
      emulatorCpuS: emulatorCpu.cpuSeconds(),
      peakRssMb: run.peak_rss_mb,
      eventsPerItem: run.histories.events_per_item,
      apiCallsPerImage: calls.per_image,
      loadAtStart,
      windowS: run.window_s,
      idle: run.idle,
    });
  } finally {
    emulatorCpu.stop();
    await emulator.stop();
  }
}

async function devServerEmbedded(dir: string, spec: ClusterCapacitySpec): Promise<SetupFigures> {
  const loadAtStart = load1();
  const side = await comparePixelmill({
    dir,
    items: spec.items,
    rps: UNBOUND_RPS,
    timeScale: CAPACITY_TIME_SCALE,
    deadline: spec.deadline,
    maxInFlight: MAX_IN_FLIGHT,
  });
  return figuresOf({
    finished: side.finished,
    images: side.images,
    wallS: side.wall_s,
    pixelmillCpuS: { cli: side.cpu_s },
    temporalCpuS: { dev_server: side.temporal_server_cpu_s ?? 0 },
    emulatorCpuS: side.emulator_cpu_s,
    peakRssMb: { cli: side.peak_rss_mb, dev_server: side.temporal_server_peak_rss_mb ?? 0 },
    eventsPerItem: side.histories?.events_per_item ?? 0,
    apiCallsPerImage: side.api_calls.per_image,
    loadAtStart,
  });
}

async function devServerWorker(dir: string, spec: ClusterCapacitySpec): Promise<SetupFigures> {
  const stateDir = join(dir, 'temporal');
  const { server } = await startDevServerIn(stateDir);
  try {
    const meterTemporal = (): CpuMeter => {
      const sampler = new ProcessSampler(server.pid, 1_000);
      return {
        stop: () => {
          sampler.stop();
          return { dev_server: sampler.cpuSeconds() };
        },
      };
    };
    return await workerSetup(dir, spec, {
      temporal: { address: server.address, namespace: NAMESPACE },
      meterTemporal,
    });
  } finally {
    await stopRegisteredDevServer(stateDir);
  }
}

async function clusterWorker(
  dir: string,
  spec: ClusterCapacitySpec,
  tools: ClusterTools,
): Promise<SetupFigures> {
  const cluster = await startTemporalCluster(tools, { namespace: NAMESPACE });
  try {
    spec.say(`cluster started in ${round(cluster.startMs / 1000, 1)} s (${cluster.dir})`);
    const pids = cluster.pids();
    return await workerSetup(dir, spec, {
      temporal: { address: cluster.address, namespace: NAMESPACE },
      // Temporal's own worker service, not to be read as pixelmill's worker.
      meterTemporal: () =>
        new TreeCpuMeter({
          frontend: pids.frontend,
          history: pids.history,
          matching: pids.matching,
          worker_service: pids.worker,
          postgres: pids.postgres,
        }),
    });
  } finally {
    await cluster.stop();
  }
}

export async function clusterCapacityBenchmark(spec: ClusterCapacitySpec): Promise<ClusterCapacityResult> {
  const installed = await clusterTools();
  if ('skip' in installed) throw new Error(`no Temporal cluster on this machine: ${installed.skip}`);
  const { tools } = installed;
  const rounds: Record<Setup, SetupFigures | null>[] = [];
  for (let k = 0; k < spec.rounds && (k === 0 || Date.now() < spec.deadline); k++) {
    // Alternating the order spreads whatever the machine's other load does over all set-ups.
    const order = k % 2 === 0 ? SETUPS : [...SETUPS].reverse();
    const figures: Record<Setup, SetupFigures | null> = {
      dev_server_embedded: null,
      dev_server_worker: null,
      cluster_worker: null,
    };
    for (const setup of order) {
      if (Date.now() >= spec.deadline) break;
      const dir = join(spec.dir, `round-${k + 1}`, setup);
      mkdirSync(dir, { recursive: true });
      spec.say(`capacity on ${setup}, round ${k + 1} (load ${load1()})...`);
      figures[setup] =
        setup === 'dev_server_embedded'
          ? await devServerEmbedded(dir, spec)
          : setup === 'dev_server_worker'
            ? await devServerWorker(dir, spec)
            : await clusterWorker(dir, spec, tools);
    }
    rounds.push(figures);
  }
  return {
    items: spec.items,
    rps: UNBOUND_RPS,
    time_scale: CAPACITY_TIME_SCALE,
    cluster_version: tools.version,
    setups: medianOfEach(rounds),
    rounds,
  };
}

/** The medians as a table: a column per set-up, CPU per image by process. */
export function formatClusterCapacity(result: ClusterCapacityResult): string {
  const setups = SETUPS.filter((setup) => result.setups[setup]);
  const of = (figure: (f: SetupFigures) => string | number | undefined): (string | number | undefined)[] =>
    setups.map((setup) => figure(result.setups[setup]!));
  const names = (records: (f: SetupFigures) => Record<string, number>): string[] => [
    ...new Set(setups.flatMap((setup) => Object.keys(records(result.setups[setup]!)))),
  ];
  const byName = (title: string, records: (f: SetupFigures) => Record<string, number>) =>
    names(records).map((name) => [`${title}${name}`, ...of((f) => records(f)[name] ?? '-')]);
  const rows: (string | number | undefined)[][] = [
    [
      `${result.items} items, medians of ${result.rounds.length} round(s); cluster: Temporal ${result.cluster_version}`,
      ...setups,
    ],
    ['images/s', ...of((f) => f.images_per_s)],
    ['wall s', ...of((f) => f.wall_s)],
    ['pixelmill CPU ms per image', ...of((f) => f.cpu_ms_per_image.pixelmill)],
    ...byName('  ', (f) => f.cpu_ms_per_image.pixelmill_by_process),
    ['Temporal CPU ms per image', ...of((f) => f.cpu_ms_per_image.temporal)],
    ...byName('  ', (f) => f.cpu_ms_per_image.temporal_by_process),
    ['  beyond idling', ...of((f) => f.cpu_ms_per_image.temporal_beyond_idle ?? '-')],
    ['emulator CPU ms per image', ...of((f) => f.cpu_ms_per_image.emulator)],
    ['Temporal cores at 100 images/s', ...of((f) => f.temporal_cores_per_100_images_per_s)],
    ['Temporal cores idling (a worker polling, no run)', ...of((f) => f.temporal_idle_cores ?? '-')],
    ...byName('  ', (f) => f.idle_cores_by_process ?? {}),
    ['history events per item', ...of((f) => f.history_events_per_item)],
    ['API calls per image (the emulator)', ...of((f) => f.api_calls_per_image)],
    ...byName('peak RSS MB, ', (f) => f.peak_rss_mb),
    ['load average (start, end)', ...of((f) => `${f.load_average.start}, ${f.load_average.end}`)],
  ];
  return `${renderTable(rows)}\n`;
}
