// `npm run bench`: pixelmill against a naive client on identical emulators, plus the capacity
// figures of issue #6 (section 1). Every phase runs real processes: the emulator, the Temporal dev
// server, the `pixelmill` CLI with its in-process workers, the baseline; all are stopped at the end.
//
//   npm run bench -- --items 10000 --rps 50 [--webhooks] [--json out.json]
//
// Phases (--phases, comma separated, default all, in this order):
//   pixelmill  `pixelmill run` on N items at R requests/s (the emulator's rate limit is R too)
//   s3         the same run with an s3:// output on rclone serve s3 (state and images in the
//              bucket), and the object-store requests per image (bench/s3-output.ts)
//   naive      the baseline (bench/naive.ts) on a fresh emulator with the same config
//   capacity   pixelmill's images/s when neither the rate limit nor generation time binds, beside
//              the script baseline (bench/script.ts) on an identical emulator, and each one's CPU
//              per image; --cpu-prof DIR writes V8 CPU profiles of the CLI's threads there
//              (summed up by node dist/bench/cpu-profile.js DIR); --capacity-rounds K runs the
//              three sides K times and reports the medians (one run's ratios are noisy);
//              --temporal cluster runs it instead on the dev server and on a real Temporal cluster
//              on PostgreSQL (issue #43, bench/capacity-cluster.ts), K rounds, no scripts
//   emulator   the emulator's requests/s on one core (bench/emulator-throughput.ts)
//   big        a 100,000-item manifest: validate time, and time until its run has started
//   incremental issue #16: the pixelmill run again with 1% of its prompts edited (tasks, credits,
//              wall against the first run), and `pixelmill plan` of --big-items items against
//              an index of as many (bench/incremental.ts)
//   adaptive   issue #13: manifests naming no rate, so pixelmill discovers the emulator's limit R
//              per group; parts (--adaptive-parts, default all): steady (N items), change (the
//              limit drops to --low-rps at 1/3 of the run, back at 2/3), two (two runs of N/2 at
//              once, one account), naive (the baseline told R). See bench/adaptive.ts.
//              npm run build && node dist/bench/main.js --phases adaptive --items 600
// The naive baseline polls in real seconds and is slow by design: it stops after --naive-limit
// seconds and its wall time is projected from the items it finished.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ADAPTIVE_PARTS, adaptiveBenchmark, type AdaptivePart } from './adaptive.js';
import { bigManifest } from './big-manifest.js';
import { capacityBenchmark } from './capacity.js';
import {
  clusterCapacityBenchmark,
  formatClusterCapacity,
  type ClusterCapacityResult,
} from './capacity-cluster.js';
import { incrementalBenchmark } from './incremental.js';
import { s3OutputBenchmark } from './s3-output.js';
import { compareNaive, comparePixelmill } from './compare.js';
import { meanGenerationSeconds, startEmulatorProcess } from './emulator-process.js';
import { round } from './figures.js';
import { cleanUpAll, cleanUpOnSignals, exited, spawnNode } from './processes.js';
import { formatTable, targetsOf, type BenchResult } from './report.js';

const PHASES = [
  'pixelmill',
  's3',
  'naive',
  'capacity',
  'emulator',
  'big',
  'incremental',
  'adaptive',
] as const;
type Phase = (typeof PHASES)[number];

interface Options {
  items: number;
  rps: number;
  webhooks: boolean;
  timeScale: number;
  maxInFlight: number;
  /** --max-in-flight as given: the adaptive manifests name none unless it is. */
  maxInFlightGiven?: number;
  naiveConcurrency: number;
  naiveLimitS: number;
  capacityItems: number;
  capacityRounds: number;
  /** Where the capacity phase's Temporal runs: the dev server, or also a real cluster. */
  temporal: 'dev' | 'cluster';
  cpuProfileDir?: string;
  emulatorSeconds: number;
  emulatorTasks: number;
  bigItems: number;
  lowRps: number;
  adaptiveParts: AdaptivePart[];
  adaptiveNaiveConcurrency: number;
  deadlineS: number;
  phases: Phase[];
  json?: string;
  dir?: string;
  keep: boolean;
}

function positive(name: string, value: string | undefined, integer = true): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0 || (integer && !Number.isInteger(number)))
    throw new Error(`--${name} must be a positive ${integer ? 'integer' : 'number'}, not "${value}"`);
  return number;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      items: { type: 'string', default: '10000' },
      rps: { type: 'string', default: '50' },
      webhooks: { type: 'boolean', default: false },
      'time-scale': { type: 'string', default: '0.1' },
      'max-in-flight': { type: 'string' },
      'naive-concurrency': { type: 'string', default: '8' },
      'naive-limit': { type: 'string', default: '900' },
      'capacity-items': { type: 'string' },
      'capacity-rounds': { type: 'string', default: '1' },
      temporal: { type: 'string', default: 'dev' },
      'cpu-prof': { type: 'string' },
      'emulator-seconds': { type: 'string', default: '10' },
      'emulator-tasks': { type: 'string', default: '100000' },
      'big-items': { type: 'string', default: '100000' },
      'low-rps': { type: 'string', default: '20' },
      'adaptive-parts': { type: 'string', default: ADAPTIVE_PARTS.join(',') },
      'adaptive-naive-concurrency': { type: 'string' },
      deadline: { type: 'string', default: '7200' },
      phases: { type: 'string', default: PHASES.join(',') },
      json: { type: 'string' },
      dir: { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
  });
  const items = positive('items', values.items);
  const rps = positive('rps', values.rps, false);
  const timeScale = positive('time-scale', values['time-scale'], false);
  const phases = values.phases.split(',').map((phase) => phase.trim());
  const unknown = phases.filter((phase) => !(PHASES as readonly string[]).includes(phase));
  if (unknown.length)
    throw new Error(`--phases: unknown ${unknown.join(', ')} (known: ${PHASES.join(', ')})`);
  if (values.temporal !== 'dev' && values.temporal !== 'cluster')
    throw new Error(`--temporal must be dev or cluster, not "${values.temporal}"`);
  const parts = values['adaptive-parts'].split(',').map((part) => part.trim());
  const unknownParts = parts.filter((part) => !(ADAPTIVE_PARTS as readonly string[]).includes(part));
  if (unknownParts.length)
    throw new Error(
      `--adaptive-parts: unknown ${unknownParts.join(', ')} (known: ${ADAPTIVE_PARTS.join(', ')})`,
    );
  return {
    items,
    rps,
    webhooks: values.webhooks,
    timeScale,
    // In flight at once ~ rate x time a task spends at the API; 5 s of margin covers polling lag.
    maxInFlight: values['max-in-flight']
      ? positive('max-in-flight', values['max-in-flight'])
      : Math.max(100, Math.ceil(rps * (meanGenerationSeconds(timeScale) + 5))),
    ...(values['max-in-flight']
      ? { maxInFlightGiven: positive('max-in-flight', values['max-in-flight']) }
      : {}),
    naiveConcurrency: positive('naive-concurrency', values['naive-concurrency']),
    naiveLimitS: positive('naive-limit', values['naive-limit'], false),
    capacityItems: values['capacity-items'] ? positive('capacity-items', values['capacity-items']) : items,
    capacityRounds: positive('capacity-rounds', values['capacity-rounds']),
    temporal: values.temporal,
    ...(values['cpu-prof'] ? { cpuProfileDir: resolve(values['cpu-prof']) } : {}),
    emulatorSeconds: positive('emulator-seconds', values['emulator-seconds'], false),
    emulatorTasks: positive('emulator-tasks', values['emulator-tasks']),
    bigItems: positive('big-items', values['big-items']),
    lowRps: positive('low-rps', values['low-rps'], false),
    adaptiveParts: parts as AdaptivePart[],
    // Told R, the baseline needs R x (generation + its polling lag, up to 8 s) items in flight to use it.
    adaptiveNaiveConcurrency: values['adaptive-naive-concurrency']
      ? positive('adaptive-naive-concurrency', values['adaptive-naive-concurrency'])
      : Math.ceil(rps * (meanGenerationSeconds(timeScale) + 10)),
    deadlineS: positive('deadline', values.deadline, false),
    phases: phases as Phase[],
    ...(values.json ? { json: values.json } : {}),
    ...(values.dir ? { dir: values.dir } : {}),
    keep: values.keep,
  };
}

/**
 * The manifest's `webhooks` block for --webhooks: the embedded receiver of `pixelmill run`, which
 * checks signatures with PIXELMILL_WEBHOOK_SECRET (set to the emulator account's secret).
 */
function webhooksBlock(): Record<string, unknown> {
  return { enabled: true };
}

async function emulatorThroughput(dir: string, options: Options): Promise<Record<string, unknown>> {
  const script = fileURLToPath(new URL('./emulator-throughput.js', import.meta.url));
  const out = join(dir, 'emulator-throughput.json');
  const args = [
    script,
    '--seconds',
    String(options.emulatorSeconds),
    '--tasks',
    String(options.emulatorTasks),
  ];
  const child = spawnNode([...args, '--json', out], { stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await exited(child);
  if (code !== 0) throw new Error(`bench/emulator-throughput exited with code ${code}`);
  return JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
}

/** The bench's result, with the capacity phase on a cluster when --temporal cluster ran it. */
type MainResult = BenchResult & { capacity_cluster?: ClusterCapacityResult };

async function runPhases(options: Options, root: string, result: MainResult): Promise<void> {
  const deadline = Date.now() + options.deadlineS * 1000;
  const webhooks = options.webhooks ? webhooksBlock() : undefined;
  const say = (line: string): void => void process.stderr.write(`bench: ${line}\n`);
  const dirOf = (phase: string): string => {
    const dir = join(root, phase);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  const common = { items: options.items, rps: options.rps, timeScale: options.timeScale, deadline };
  for (const phase of PHASES.filter((p) => options.phases.includes(p))) {
    if (Date.now() >= deadline) {
      say(`deadline reached; ${phase} not run`);
      continue;
    }
    say(`${phase}...`);
    if (phase === 'pixelmill') {
      result.pixelmill = await comparePixelmill({
        ...common,
        dir: dirOf(phase),
        maxInFlight: options.maxInFlight,
        ...(webhooks ? { webhooks } : {}),
      });
    } else if (phase === 's3') {
      result.s3_output = await s3OutputBenchmark({
        ...common,
        dir: dirOf(phase),
        maxInFlight: options.maxInFlight,
      });
    } else if (phase === 'naive') {
      result.naive = await compareNaive({
        ...common,
        dir: dirOf(phase),
        concurrency: options.naiveConcurrency,
        deadline: Math.min(deadline, Date.now() + options.naiveLimitS * 1000),
      });
    } else if (phase === 'capacity' && options.temporal === 'cluster') {
      result.capacity_cluster = await clusterCapacityBenchmark({
        dir: dirOf(phase),
        items: options.capacityItems,
        rounds: options.capacityRounds,
        deadline,
        say,
      });
    } else if (phase === 'capacity') {
      result.capacity = await capacityBenchmark({
        dir: dirOf(phase),
        items: options.capacityItems,
        rounds: options.capacityRounds,
        deadline,
        ...(options.cpuProfileDir ? { cpuProfileDir: options.cpuProfileDir } : {}),
      });
    } else if (phase === 'adaptive') {
      result.adaptive = await adaptiveBenchmark({
        dir: dirOf(phase),
        items: options.items,
        rps: options.rps,
        lowRps: options.lowRps,
        timeScale: options.timeScale,
        ...(options.maxInFlightGiven !== undefined ? { maxInFlight: options.maxInFlightGiven } : {}),
        naiveConcurrency: options.adaptiveNaiveConcurrency,
        naiveLimitS: options.naiveLimitS,
        deadline,
        parts: options.adaptiveParts,
        say,
      });
    } else if (phase === 'incremental') {
      result.incremental = await incrementalBenchmark({
        ...common,
        dir: dirOf(phase),
        maxInFlight: options.maxInFlight,
        planItems: options.bigItems,
      });
    } else if (phase === 'emulator') {
      result.emulator_throughput = await emulatorThroughput(dirOf(phase), options);
    } else {
      const dir = dirOf(phase);
      const emulator = await startEmulatorProcess(dir, {
        timeScale: options.timeScale,
        requestsPerSecond: options.rps,
      });
      try {
        result.big_manifest = await bigManifest(dir, options.bigItems, emulator);
      } finally {
        await emulator.stop();
      }
    }
  }
}

async function main(): Promise<number> {
  cleanUpOnSignals();
  // As bin/pixelmill.js does: the AWS SDK's advice to whoever upgrades Node is not a benchmark figure.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const options = parseOptions(process.argv.slice(2));
  const root = options.dir ?? mkdtempSync(join(tmpdir(), 'pixelmill-bench-'));
  mkdirSync(root, { recursive: true });
  const result: MainResult = {
    benchmark: 'pixelmill',
    date: new Date().toISOString(),
    machine: { cpus: availableParallelism(), node: process.version },
    options: { ...options, dir: root },
    emulator: {
      time_scale: options.timeScale,
      rate_limit_per_s: options.rps,
      mean_generation_s: round(meanGenerationSeconds(options.timeScale), 2),
      note:
        `generation compressed ${round(1 / options.timeScale, 1)}x; rate limits real-time. ` +
        'Re-hosting MB/s = image bytes stored (report.jsonl / downloaded) / wall time.',
    },
    pixelmill: null,
    s3_output: null,
    naive: null,
    capacity: null,
    emulator_throughput: null,
    big_manifest: null,
    adaptive: null,
    incremental: null,
    targets: [],
  };
  let completed = false;
  try {
    await runPhases(options, root, result);
    completed = true;
  } finally {
    await cleanUpAll();
    result.targets = targetsOf(result, options.webhooks);
    process.stdout.write(formatTable(result));
    if (result.capacity_cluster) process.stdout.write(formatClusterCapacity(result.capacity_cluster));
    if (options.json) writeFileSync(options.json, `${JSON.stringify(result, null, 2)}\n`);
    // A failed bench keeps its folder: the CLI logs and reports are the way to find out why.
    if (completed && !options.keep && !options.dir) rmSync(root, { recursive: true, force: true });
    else process.stderr.write(`bench: files kept in ${root}\n`);
  }
  return 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
