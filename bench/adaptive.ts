// The adaptive rate governor's benchmark (issue #13): the manifests name NO rate, so pixelmill
// must discover the emulator's limits (R calls/s per endpoint group, submit and query) from its
// 429s. Each part has a fresh emulator (time_scale as given) and a fresh Temporal dev server, so
// every run starts knowing nothing:
//
//   steady  N items at a constant limit R
//   change  N items; the limit drops to --low-rps at about 1/3 of the run's calls and returns to
//           R at about 2/3 (PUT /_emulator/rate-limits on the running emulator)
//   two     two manifests of N/2 items, started at once by two CLIs against one dev server, the
//           same API key: the account's rate must be shared, and fairly
//   naive   the baseline (bench/naive.ts), told the true rate R (it cannot discover it)
//
// The physical limit of a part is max(submits / R_submit, queries / R_query) + one mean generation
// time, from the calls the emulator admitted (answered with anything but 429: a 429 takes no token);
// with a changing limit, that sum per stretch at the rate then in force. 429s and calls per image
// are the emulator's own counts; pixelmill's (summary.json) are reported beside them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import type { ApiCallCounts } from '../common/types.js';
import type { EmulatorStats } from '../emulator/apimart/routes/admin.js';
import { runPixelmillGroup, type ProgressSample, type RunOutcome } from './adaptive-run.js';
import { runNaive } from './compare.js';
import { meanGenerationSeconds, startEmulatorProcess, type EmulatorProcess } from './emulator-process.js';
import { round } from './figures.js';

export const ADAPTIVE_PARTS = ['steady', 'change', 'two', 'naive'] as const;
export type AdaptivePart = (typeof ADAPTIVE_PARTS)[number];

export interface AdaptiveSpec {
  dir: string;
  items: number;
  /** The emulator's limit per group (submit, query), burst the same. */
  rps: number;
  /** The limit of the middle stretch of the `change` part. */
  lowRps: number;
  timeScale: number;
  /** `limits.max_in_flight` of the manifests; absent: pixelmill's default (a user who names no rate names none). */
  maxInFlight?: number;
  naiveConcurrency: number;
  /** Seconds after which the naive baseline stops (its wall time is then projected). */
  naiveLimitS: number;
  deadline: number;
  parts: readonly AdaptivePart[];
  /** Progress samples and limit checks, ms apart. */
  sampleMs?: number;
  say?: (line: string) => void;
}

type Group = 'submit' | 'query';
type GroupCounts = Record<Group, number>;

export interface Limit {
  seconds: number;
  formula: string;
}

export interface AdaptiveCalls {
  /** Calls the emulator answered with anything but 429, by group: what took a token. */
  admitted: GroupCounts;
  http_429: GroupCounts;
  /** Every API call (/v1/...), 429s included. */
  total: number;
  /** Share of API calls answered 429, in percent. */
  share_429_pct: number;
  /** Every API call / images stored. */
  per_image: number;
  /** What pixelmill counted itself (summary.json `api_calls`, runs added up); null for the baseline. */
  reported: ApiCallCounts | null;
}

export interface AdaptiveFigures {
  items: number;
  items_completed: number;
  images: number;
  finished: boolean;
  wall_s: number;
  /** From the calls admitted, at the limit(s) in force, plus one mean generation time. */
  limit: Limit;
  wall_to_limit: number;
  /** One submit and one query per image at R, plus one generation: the best any polling client can do. */
  ideal_limit: Limit;
  wall_to_ideal: number;
  calls: AdaptiveCalls;
  /** Per run, the rates (calls/s) the governor granted at its end (summary.json `rates`); [] for the baseline. */
  final_rates: { submit: number | null; query: number | null }[];
  logs: string[];
}

export interface Stretch {
  /** Seconds since the run started. */
  from_s: number;
  to_s: number;
  per_second: number;
  admitted: GroupCounts;
  http_429: GroupCounts;
  /** max(submits, queries) / per_second: the stretch's share of the physical limit. */
  limit_s: number;
}

export interface RunShare {
  name: string;
  items: number;
  wall_s: number;
  /** Calls it made while both ran (its progress counts), and its share of both runs' calls then. */
  calls_while_both: number | null;
  share_while_both_pct: number | null;
}

export interface AdaptiveResult {
  items: number;
  rate_per_s: number;
  low_rate_per_s: number;
  time_scale: number;
  mean_generation_s: number;
  /** The manifests' `max_in_flight`; null: pixelmill's default. */
  max_in_flight: number | null;
  steady: AdaptiveFigures | null;
  changing_limit:
    | (AdaptiveFigures & {
        /** When the limit changed (seconds since the run started) and to what. */
        changes: { at_s: number; per_second: number }[];
        stretches: Stretch[];
      })
    | null;
  two_runs:
    | (AdaptiveFigures & {
        runs: RunShare[];
        /** How long both runs were running together (later start to earlier close). */
        both_running_s: number;
      })
    | null;
  naive:
    (AdaptiveFigures & { concurrency: number; projected_wall_s: number | null; peak_rss_mb: number }) | null;
}

const GROUPS: readonly Group[] = ['submit', 'query'];
const zero = (): GroupCounts => ({ submit: 0, query: 0 });

/** The endpoint group of an emulator route label's path; null for what is not an API call. */
function groupOf(route: string): Group | null {
  if (route === '/v1/images/generations') return 'submit';
  if (route.startsWith('/v1/tasks')) return 'query';
  return null;
}

interface Tally {
  admitted: GroupCounts;
  http_429: GroupCounts;
  total: number;
}

function tallyOfStats(stats: EmulatorStats): Tally {
  const tally: Tally = { admitted: zero(), http_429: zero(), total: 0 };
  for (const [label, byStatus] of Object.entries(stats.requests)) {
    const group = groupOf(label.split(' ')[1] ?? '');
    if (!group) continue;
    for (const [status, count] of Object.entries(byStatus)) {
      tally.total += count;
      if (status === '429') tally.http_429[group] += count;
      else tally.admitted[group] += count;
    }
  }
  return tally;
}

interface LoggedRequest {
  t_ms: number;
  route: string;
  status: number;
}

/** The emulator's request log (its last 1,000,000 requests), API calls only. */
async function apiRequestLog(emulator: EmulatorProcess): Promise<LoggedRequest[]> {
  const response = await request(`${emulator.url}/_emulator/requests?since_ms=0`);
  const entries: LoggedRequest[] = [];
  for await (const line of createInterface({ input: response.body })) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line) as LoggedRequest;
    if (groupOf(entry.route)) entries.push(entry);
  }
  return entries;
}

/**
 * Writes `<dir>/timeline.json`: per second since `startMs`, the calls admitted and answered 429 by
 * group, and `<dir>/samples.json`: the runs' progress samples. For reading a part's figures, not
 * for the report.
 */
function writeTimeline(dir: string, log: LoggedRequest[], startMs: number, runs: RunOutcome[]): void {
  const seconds: { s: number; submit: number; query: number; submit_429: number; query_429: number }[] = [];
  for (const entry of log) {
    const s = Math.floor((entry.t_ms - startMs) / 1000);
    if (s < 0) continue;
    while (seconds.length <= s)
      seconds.push({ s: seconds.length, submit: 0, query: 0, submit_429: 0, query_429: 0 });
    const group = groupOf(entry.route)!;
    seconds[s]![entry.status === 429 ? (`${group}_429` as const) : group]++;
  }
  writeFileSync(join(dir, 'timeline.json'), `${JSON.stringify(seconds)}\n`);
  const samples = runs.map((run) => ({
    name: run.name,
    start_ms: run.start_ms,
    close_ms: run.close_ms,
    samples: run.samples,
  }));
  writeFileSync(join(dir, 'samples.json'), `${JSON.stringify(samples)}\n`);
}

async function setEmulatorLimit(emulator: EmulatorProcess, perSecond: number): Promise<void> {
  const bucket = { per_second: perSecond, burst: perSecond };
  const response = await request(`${emulator.url}/_emulator/rate-limits`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ submit: bucket, query: bucket }),
  });
  const text = await response.body.text();
  if (response.statusCode !== 200)
    throw new Error(`PUT /_emulator/rate-limits answered ${response.statusCode}: ${text.slice(0, 200)}`);
}

const limitSeconds = (counts: GroupCounts, perSecond: number): number =>
  Math.max(...GROUPS.map((group) => counts[group] / perSecond));

function callFigures(tally: Tally, images: number, reported: ApiCallCounts | null): AdaptiveCalls {
  return {
    admitted: tally.admitted,
    http_429: tally.http_429,
    total: tally.total,
    share_429_pct:
      tally.total > 0 ? round((100 * (tally.http_429.submit + tally.http_429.query)) / tally.total, 3) : 0,
    per_image: images > 0 ? round(tally.total / images, 4) : 0,
    reported,
  };
}

function addCounts(runs: RunOutcome[]): ApiCallCounts | null {
  if (runs.some((run) => !run.reported_api_calls)) return null;
  return runs.reduce<ApiCallCounts>(
    (sum, run) => ({
      submit: sum.submit + run.reported_api_calls!.submit,
      lookup: sum.lookup + run.reported_api_calls!.lookup,
      get: sum.get + run.reported_api_calls!.get,
    }),
    { submit: 0, lookup: 0, get: 0 },
  );
}

type Measured = Pick<
  AdaptiveFigures,
  'items' | 'items_completed' | 'images' | 'finished' | 'wall_s' | 'final_rates' | 'logs'
>;

/** The figures every part reports, from a wall time, the emulator's tally and a physical limit. */
function figuresOf(
  spec: AdaptiveSpec,
  measured: Measured,
  tally: Tally,
  limitS: number,
  limitFormula: string,
  reported: ApiCallCounts | null,
): AdaptiveFigures {
  const generation = meanGenerationSeconds(spec.timeScale);
  const limit = {
    seconds: round(limitS + generation, 2),
    formula: `${limitFormula} + ${round(generation, 2)} s generation`,
  };
  const ideal = {
    seconds: round(measured.items / spec.rps + generation, 2),
    formula: `max(${measured.items} submits, ${measured.items} queries) / ${spec.rps}/s + ${round(generation, 2)} s generation`,
  };
  return {
    ...measured,
    limit,
    wall_to_limit: limit.seconds > 0 ? round(measured.wall_s / limit.seconds, 3) : 0,
    ideal_limit: ideal,
    wall_to_ideal: round(measured.wall_s / ideal.seconds, 3),
    calls: callFigures(tally, measured.images, reported),
  };
}

function steadyLimit(tally: Tally, rps: number): { seconds: number; formula: string } {
  const { submit, query } = tally.admitted;
  return {
    seconds: limitSeconds(tally.admitted, rps),
    formula: `max(${submit} submits, ${query} queries) / ${rps}/s`,
  };
}

function measuredOf(runs: RunOutcome[]): Measured {
  const start = Math.min(...runs.map((run) => run.start_ms));
  const close = runs.every((run) => run.close_ms !== null)
    ? Math.max(...runs.map((run) => run.close_ms!))
    : Date.now();
  return {
    items: runs.reduce((sum, run) => sum + run.items, 0),
    items_completed: runs.reduce((sum, run) => sum + run.items_completed, 0),
    images: runs.reduce((sum, run) => sum + run.images, 0),
    finished: runs.every((run) => run.finished),
    wall_s: round((close - start) / 1000, 2),
    final_rates: runs.map(({ final_rates: rates }) => {
      const one = (value: number | null | undefined): number | null =>
        typeof value === 'number' ? round(value, 1) : null;
      return { submit: one(rates?.submit), query: one(rates?.query) };
    }),
    logs: runs.map((run) => run.cli_log),
  };
}

async function withEmulator<T>(
  dir: string,
  spec: AdaptiveSpec,
  body: (emulator: EmulatorProcess) => Promise<T>,
): Promise<T> {
  mkdirSync(dir, { recursive: true });
  const emulator = await startEmulatorProcess(dir, {
    timeScale: spec.timeScale,
    requestsPerSecond: spec.rps,
  });
  try {
    return await body(emulator);
  } finally {
    await emulator.stop();
  }
}

function runDir(dir: string, name: string): string {
  const path = join(dir, name);
  mkdirSync(path, { recursive: true });
  return path;
}

const groupSpec = (spec: AdaptiveSpec) => ({
  ...(spec.maxInFlight !== undefined ? { maxInFlight: spec.maxInFlight } : {}),
  deadline: spec.deadline,
  sampleMs: spec.sampleMs ?? 1_000,
});

async function steady(spec: AdaptiveSpec): Promise<AdaptiveFigures> {
  const dir = join(spec.dir, 'steady');
  return withEmulator(dir, spec, async (emulator) => {
    const runs = await runPixelmillGroup({
      dir,
      emulator,
      runs: [{ name: 'bench-adaptive', dir: runDir(dir, 'run'), items: spec.items }],
      ...groupSpec(spec),
    });
    const tally = tallyOfStats(await emulator.stats());
    writeTimeline(dir, await apiRequestLog(emulator), runs[0]!.start_ms, runs);
    const limit = steadyLimit(tally, spec.rps);
    return figuresOf(spec, measuredOf(runs), tally, limit.seconds, limit.formula, addCounts(runs));
  });
}

/** Calls admitted per group, and 429s, of the logged requests with from <= t_ms < to. */
function stretchOf(
  log: LoggedRequest[],
  fromMs: number,
  toMs: number,
  startMs: number,
  perSecond: number,
): Stretch {
  const admitted = zero();
  const http429 = zero();
  for (const entry of log) {
    if (entry.t_ms < fromMs || entry.t_ms >= toMs) continue;
    const group = groupOf(entry.route)!;
    if (entry.status === 429) http429[group]++;
    else admitted[group]++;
  }
  return {
    from_s: round(Math.max(0, fromMs - startMs) / 1000, 2),
    to_s: round((toMs - startMs) / 1000, 2),
    per_second: perSecond,
    admitted,
    http_429: http429,
    limit_s: round(limitSeconds(admitted, perSecond), 2),
  };
}

async function changingLimit(spec: AdaptiveSpec): Promise<NonNullable<AdaptiveResult['changing_limit']>> {
  const dir = join(spec.dir, 'change');
  const say = spec.say ?? ((): void => {});
  return withEmulator(dir, spec, async (emulator) => {
    // "A third of the run" by its work: the calls admitted, of the two a perfect client makes per item.
    const expectedCalls = 2 * spec.items;
    const plan = [
      { afterCalls: expectedCalls / 3, perSecond: spec.lowRps },
      { afterCalls: (2 * expectedCalls) / 3, perSecond: spec.rps },
    ];
    const changes: { t_ms: number; per_second: number }[] = [];
    const onTick = async (): Promise<void> => {
      const next = plan[changes.length];
      if (!next) return;
      const { admitted } = tallyOfStats(await emulator.stats());
      if (admitted.submit + admitted.query < next.afterCalls) return;
      await setEmulatorLimit(emulator, next.perSecond);
      changes.push({ t_ms: Date.now(), per_second: next.perSecond });
      say(`adaptive change: the emulator's limit is now ${next.perSecond}/s per group`);
    };
    const runs = await runPixelmillGroup({
      dir,
      emulator,
      runs: [{ name: 'bench-adaptive-change', dir: runDir(dir, 'run'), items: spec.items }],
      ...groupSpec(spec),
      onTick,
      tickMs: 250,
    });
    const tally = tallyOfStats(await emulator.stats());
    const log = await apiRequestLog(emulator);
    const run = runs[0]!;
    writeTimeline(dir, log, run.start_ms, runs);
    // Every logged call falls in a stretch: the first from the earlier of the run's start and the
    // first call, the last to the later of its close and the last call.
    const first = log.reduce((min, entry) => Math.min(min, entry.t_ms), run.start_ms);
    const end = log.reduce((max, entry) => Math.max(max, entry.t_ms + 1), run.close_ms ?? Date.now());
    const bounds = [first, ...changes.map((change) => change.t_ms), end];
    const rates = [spec.rps, ...changes.map((change) => change.per_second)];
    const stretches = rates.map((perSecond, i) =>
      stretchOf(log, bounds[i]!, bounds[i + 1]!, run.start_ms, perSecond),
    );
    const limitS = stretches.reduce((sum, stretch) => sum + stretch.limit_s, 0);
    const formula = stretches
      .map((s) => `max(${s.admitted.submit}, ${s.admitted.query}) / ${s.per_second}`)
      .join(' + ');
    return {
      ...figuresOf(spec, measuredOf(runs), tally, limitS, formula, addCounts(runs)),
      changes: changes.map((change) => ({
        at_s: round((change.t_ms - run.start_ms) / 1000, 2),
        per_second: change.per_second,
      })),
      stretches,
    };
  });
}

const callsOf = (sample: ProgressSample): number =>
  sample.api_calls ? sample.api_calls.submit + sample.api_calls.lookup + sample.api_calls.get : 0;

/**
 * Each run's share of the calls made while both ran: the growth of its own counts between the
 * first and the last moment both runs answered inside [later start, earlier close]. The live
 * counts dip for a moment when a shard closes (its calls move to the run's totals between the two
 * queries of a sample), so each run's series is taken as its running maximum: never above what it
 * had counted by then.
 */
function sharesWhileBoth(runs: RunOutcome[]): { shares: RunShare[]; bothS: number } {
  const from = Math.max(...runs.map((run) => run.start_ms));
  const to = Math.min(...runs.map((run) => run.close_ms ?? Date.now()));
  // The samples were taken together, one tick at a time: index k of each run is the same moment.
  const ticks = Math.min(...runs.map((run) => run.samples.length));
  const counted = runs.map((run) => {
    let max = 0;
    return run.samples.map((sample) => (max = Math.max(max, callsOf(sample))));
  });
  const both: number[] = [];
  for (let k = 0; k < ticks; k++) {
    const at = runs.map((run) => run.samples[k]!);
    if (at.every((sample) => sample.api_calls && sample.t_ms >= from && sample.t_ms <= to)) both.push(k);
  }
  const first = both[0];
  const last = both.at(-1);
  const deltas = counted.map((series) =>
    first !== undefined && last !== undefined && last > first ? series[last]! - series[first]! : null,
  );
  const total = deltas.reduce<number>((sum, delta) => sum + (delta ?? 0), 0);
  return {
    bothS: round(Math.max(0, to - from) / 1000, 2),
    shares: runs.map((run, i) => ({
      name: run.name,
      items: run.items,
      wall_s: run.wall_s,
      calls_while_both: deltas[i] ?? null,
      share_while_both_pct: deltas[i] !== null && total > 0 ? round((100 * deltas[i]!) / total, 1) : null,
    })),
  };
}

async function twoRuns(spec: AdaptiveSpec): Promise<NonNullable<AdaptiveResult['two_runs']>> {
  const dir = join(spec.dir, 'two');
  return withEmulator(dir, spec, async (emulator) => {
    const half = Math.max(1, Math.floor(spec.items / 2));
    const runs = await runPixelmillGroup({
      dir,
      emulator,
      runs: [
        { name: 'bench-adaptive-a', dir: runDir(dir, 'a'), items: half },
        { name: 'bench-adaptive-b', dir: runDir(dir, 'b'), items: spec.items - half || half },
      ],
      ...groupSpec(spec),
    });
    const tally = tallyOfStats(await emulator.stats());
    writeTimeline(dir, await apiRequestLog(emulator), Math.min(...runs.map((run) => run.start_ms)), runs);
    const limit = steadyLimit(tally, spec.rps);
    const { shares, bothS } = sharesWhileBoth(runs);
    return {
      ...figuresOf(spec, measuredOf(runs), tally, limit.seconds, limit.formula, addCounts(runs)),
      runs: shares,
      both_running_s: bothS,
    };
  });
}

async function naive(spec: AdaptiveSpec): Promise<NonNullable<AdaptiveResult['naive']>> {
  const dir = join(spec.dir, 'naive');
  return withEmulator(dir, spec, async (emulator) => {
    const figures = await runNaive(emulator, {
      dir,
      items: spec.items,
      concurrency: spec.naiveConcurrency,
      deadline: Math.min(spec.deadline, Date.now() + spec.naiveLimitS * 1000),
      rps: spec.rps,
    });
    const tally = tallyOfStats(await emulator.stats());
    const limit = steadyLimit(tally, spec.rps);
    const measured = {
      items: spec.items,
      items_completed: figures.items_completed,
      images: figures.images,
      finished: figures.finished,
      wall_s: figures.wall_s,
      final_rates: [],
      logs: [],
    };
    return {
      ...figuresOf(spec, measured, tally, limit.seconds, limit.formula, null),
      concurrency: spec.naiveConcurrency,
      projected_wall_s:
        !figures.finished && figures.items_completed > 0
          ? round((figures.wall_s * spec.items) / figures.items_completed, 2)
          : null,
      peak_rss_mb: figures.peak_rss_mb,
    };
  });
}

/** Runs the parts asked for, in order; a part not reached before the deadline is left null. */
export async function adaptiveBenchmark(spec: AdaptiveSpec): Promise<AdaptiveResult> {
  const say = spec.say ?? ((): void => {});
  const result: AdaptiveResult = {
    items: spec.items,
    rate_per_s: spec.rps,
    low_rate_per_s: spec.lowRps,
    time_scale: spec.timeScale,
    mean_generation_s: round(meanGenerationSeconds(spec.timeScale), 2),
    max_in_flight: spec.maxInFlight ?? null,
    steady: null,
    changing_limit: null,
    two_runs: null,
    naive: null,
  };
  for (const part of ADAPTIVE_PARTS.filter((p) => spec.parts.includes(p))) {
    if (Date.now() >= spec.deadline) {
      say(`deadline reached; adaptive ${part} not run`);
      continue;
    }
    say(`adaptive ${part}...`);
    if (part === 'steady') result.steady = await steady(spec);
    else if (part === 'change') result.changing_limit = await changingLimit(spec);
    else if (part === 'two') result.two_runs = await twoRuns(spec);
    else result.naive = await naive(spec);
  }
  return result;
}
