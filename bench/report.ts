// What `npm run bench` reports: one JSON object (BenchResult) and the same figures as a plain
// text table, with the targets of issue #6 checked against the pixelmill side, those of issue #13
// (the adaptive rate governor) against the adaptive phase, and issue #15's s3:// run against the
// local one.
import type { AdaptiveFigures, AdaptiveResult } from './adaptive.js';
import type { BigManifestFigures } from './big-manifest.js';
import type { CapacityFigures, CapacityResult } from './capacity.js';
import type { IncrementalFigures } from './incremental.js';
import type { SideResult } from './compare.js';
import { round, target, targetAtLeast, type Target } from './figures.js';
import type { S3OutputResult } from './s3-output.js';

export interface BenchResult {
  benchmark: 'pixelmill';
  date: string;
  machine: { cpus: number; node: string };
  options: Record<string, unknown>;
  emulator: {
    time_scale: number;
    /** The emulator's own rate limit, per second, for submits and for queries (burst the same). */
    rate_limit_per_s: number;
    mean_generation_s: number;
    note: string;
  };
  pixelmill: SideResult | null;
  /** The pixelmill run again with an s3:// output (issue #15). */
  s3_output: S3OutputResult | null;
  naive: SideResult | null;
  capacity: CapacityResult | null;
  emulator_throughput: Record<string, unknown> | null;
  big_manifest: BigManifestFigures | null;
  /** Issue #13: manifests that name no rate, against a constant, a changing and a shared limit. */
  adaptive: AdaptiveResult | null;
  /** Issue #16: the catalog run again with 1% of its prompts edited, and `plan` of a big catalog. */
  incremental: IncrementalFigures | null;
  targets: Target[];
}

/**
 * Issue #21: at least the script's images/s, at most twice its CPU per image; against the script
 * as the issue wrote it, and against the script that also checks every image as pixelmill does.
 */
function capacityTargets(capacity: CapacityResult): Target[] {
  return [
    targetAtLeast("capacity: images/s / the script's", capacity.ratio_to_script, 1),
    target("capacity: CPU per image / the script's", capacity.cpu_ratio_to_script, 2),
    targetAtLeast("capacity: images/s / the checking script's", capacity.ratio_to_checked_script, 1),
    target("capacity: CPU per image / the checking script's", capacity.cpu_ratio_to_checked_script, 2),
  ];
}

function adaptiveTargets(adaptive: AdaptiveResult): Target[] {
  const targets: Target[] = [];
  const { steady, changing_limit: change, two_runs: two } = adaptive;
  if (steady) {
    targets.push(target('adaptive steady: wall / physical limit', steady.wall_to_limit, 1.1));
    targets.push(target('adaptive steady: % of API calls answered 429', steady.calls.share_429_pct, 1));
    targets.push(target('adaptive steady: API calls per image', steady.calls.per_image, 2.02));
  }
  if (change)
    targets.push(target('adaptive limit change: wall / piecewise limit', change.wall_to_limit, 1.2));
  if (two) {
    targets.push(target('adaptive two runs: wall / limit (both runs)', two.wall_to_limit, 1.15));
    for (const run of two.runs)
      targets.push(
        targetAtLeast(
          `adaptive two runs: ${run.name} % of calls while both ran`,
          run.share_while_both_pct,
          40,
        ),
      );
  }
  return targets;
}

export function targetsOf(result: BenchResult, webhooks: boolean): Target[] {
  const targets: Target[] = [];
  const side = result.pixelmill;
  if (side) {
    targets.push(target('pixelmill wall / bound', side.ratio_to_bound, 1.1));
    targets.push(target('pixelmill API calls per image', side.api_calls.per_image, webhooks ? 1.05 : 2.02));
    targets.push(target('pixelmill worker peak RSS MB', side.peak_rss_mb, 350));
    targets.push(target('largest workflow history (events)', side.histories?.largest.events ?? null, 10_240));
  }
  if (side && result.s3_output)
    targets.push(
      target(
        "s3:// output: wall / bound minus the local run's",
        round(result.s3_output.side.ratio_to_bound - side.ratio_to_bound, 3),
        0.03,
      ),
    );
  if (result.big_manifest)
    targets.push(
      target(`run of ${result.big_manifest.items} items started (s)`, result.big_manifest.run_start_s, 10),
    );
  if (result.adaptive) targets.push(...adaptiveTargets(result.adaptive));
  if (result.capacity) targets.push(...capacityTargets(result.capacity));
  if (result.incremental) {
    const { incremental } = result;
    targets.push(target('incremental: second run wall / first run wall', incremental.wall_ratio, 0.05));
    targets.push(
      target(
        'incremental: tasks other than one per edited item',
        Math.abs(incremental.second_tasks - incremental.edited),
        0,
      ),
    );
    targets.push(
      target(
        "incremental: credits other than the edited items' price",
        Math.abs(incremental.second_credits - incremental.edited_items_credits),
        0,
      ),
    );
    targets.push(
      target(`plan of ${incremental.plan.items} items against their index (s)`, incremental.plan.seconds, 5),
    );
  }
  return targets;
}

type Cell = string | number | null | undefined;

function cell(value: Cell): string {
  if (value === null || value === undefined) return '-';
  return typeof value === 'number' ? String(value) : value;
}

/** A plain-text table: columns padded to their widest cell, a rule under the header row. */
export function renderTable(rows: Cell[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => cell(row[column]).length)));
  const line = (row: Cell[]): string =>
    row
      .map((value, column) => cell(value).padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [line(rows[0]!), rule, ...rows.slice(1).map(line)].join('\n');
}

function comparisonRows(pixelmill: SideResult | null, naive: SideResult | null): Cell[][] {
  const both = (pick: (side: SideResult) => Cell): [Cell, Cell] => [
    pixelmill ? pick(pixelmill) : null,
    naive ? pick(naive) : null,
  ];
  const endpoints = [
    ...new Set([
      ...Object.keys(pixelmill?.api_calls.by_endpoint ?? {}),
      ...Object.keys(naive?.api_calls.by_endpoint ?? {}),
    ]),
  ].sort();
  return [
    ['figure', 'pixelmill', 'naive'],
    ['items completed', ...both((s) => `${s.items_completed} / ${s.items}${s.finished ? '' : ' (stopped)'}`)],
    ['wall time s', ...both((s) => s.wall_s)],
    ['projected wall s (stopped early)', ...both((s) => s.projected_wall_s)],
    ['bound s', ...both((s) => s.bound.seconds)],
    ['wall / bound', ...both((s) => s.ratio_to_bound)],
    ['API calls per image', ...both((s) => s.api_calls.per_image)],
    ...endpoints.map((endpoint): Cell[] => [
      `  ${endpoint}`,
      ...both((s) => s.api_calls.by_endpoint[endpoint]?.per_image ?? 0),
    ]),
    ['API calls/s (of the rate limit)', ...both((s) => s.api_calls_per_s)],
    ['429s received', ...both((s) => s.api_calls.http_429)],
    ['peak RSS MB (pixelmill: the CLI hosting the workers)', ...both((s) => s.peak_rss_mb)],
    ['Temporal dev server peak RSS MB', ...both((s) => s.temporal_server_peak_rss_mb)],
    ['history events per item', ...both((s) => s.histories?.events_per_item)],
    ['activities per item', ...both((s) => s.histories?.activities_per_item)],
    ['workflow tasks per item', ...both((s) => s.histories?.workflow_tasks_per_item)],
    ['largest workflow history', ...both((s) => s.histories?.largest.events)],
    ['run workflow history events per shard', ...both((s) => s.histories?.run_events_per_shard)],
    ['re-hosting MB/s', ...both((s) => s.rehost_mb_per_s)],
    ...(pixelmill?.webhook_deliveries
      ? [['webhooks delivered', pixelmill.webhook_deliveries.delivered, null] as Cell[]]
      : []),
  ];
}

function adaptiveRows(adaptive: AdaptiveResult): Cell[][] {
  const columns: [string, AdaptiveFigures | null][] = [
    ['steady', adaptive.steady],
    [
      `limit ${adaptive.rate_per_s}>${adaptive.low_rate_per_s}>${adaptive.rate_per_s}`,
      adaptive.changing_limit,
    ],
    ['two runs', adaptive.two_runs],
    ['naive (told R)', adaptive.naive],
  ];
  const shown = columns.filter(([, figures]) => figures !== null) as [string, AdaptiveFigures][];
  const row = (name: string, pick: (figures: AdaptiveFigures) => Cell): Cell[] => [
    name,
    ...shown.map(([, figures]) => pick(figures)),
  ];
  const reported = (figures: AdaptiveFigures): Cell => {
    const calls = figures.calls.reported;
    return calls ? `${calls.submit} / ${calls.lookup} / ${calls.get}` : null;
  };
  return [
    ['adaptive (no rate in the manifest)', ...shown.map(([name]) => name)],
    row('items completed', (f) => `${f.items_completed} / ${f.items}${f.finished ? '' : ' (stopped)'}`),
    row('wall time s', (f) => f.wall_s),
    row('physical limit s (calls admitted)', (f) => f.limit.seconds),
    row('wall / physical limit', (f) => f.wall_to_limit),
    row('ideal limit s (1 submit + 1 query per image)', (f) => f.ideal_limit.seconds),
    row('wall / ideal limit', (f) => f.wall_to_ideal),
    row('submits / queries admitted', (f) => `${f.calls.admitted.submit} / ${f.calls.admitted.query}`),
    row('429s submit / query', (f) => `${f.calls.http_429.submit} / ${f.calls.http_429.query}`),
    row('% of API calls answered 429', (f) => f.calls.share_429_pct),
    row('API calls per image', (f) => f.calls.per_image),
    row('pixelmill counted submit / lookup / get', reported),
    row('governor rates at the end, submit / query per s', (f) =>
      f.final_rates.length
        ? f.final_rates.map((r) => `${r.submit ?? '-'} / ${r.query ?? '-'}`).join(', ')
        : null,
    ),
  ];
}

function adaptiveDetails(adaptive: AdaptiveResult): Cell[][] {
  const rows: Cell[][] = [['adaptive detail', 'value']];
  for (const stretch of adaptive.changing_limit?.stretches ?? [])
    rows.push([
      `limit change: ${stretch.from_s}-${stretch.to_s} s at ${stretch.per_second}/s`,
      `${stretch.admitted.submit} submits, ${stretch.admitted.query} queries admitted, ` +
        `${stretch.http_429.submit + stretch.http_429.query} 429s; limit ${stretch.limit_s} s`,
    ]);
  const two = adaptive.two_runs;
  if (two) {
    rows.push(['two runs: both running s', two.both_running_s]);
    for (const run of two.runs)
      rows.push([
        `two runs: ${run.name} (${run.items} items)`,
        `wall ${run.wall_s} s, ${run.calls_while_both ?? '-'} calls while both ran = ${run.share_while_both_pct ?? '-'}%`,
      ]);
  }
  if (adaptive.naive)
    rows.push([
      'naive: concurrency, projected wall s (stopped early)',
      `${adaptive.naive.concurrency}, ${adaptive.naive.projected_wall_s ?? '-'}`,
    ]);
  return rows;
}

function s3Rows(s3: S3OutputResult): Cell[][] {
  const { side, requests } = s3;
  return [
    ['s3:// output: wall s (wall / bound)', `${side.wall_s} (${side.ratio_to_bound})`],
    ['  items completed', `${side.items_completed} / ${side.items}`],
    ['  object-store requests per image', s3.requests_per_image],
    [
      '  by kind: get / head / put / list / other',
      `${requests.get} / ${requests.head} / ${requests.put} / ${requests.list} / ${requests.delete + requests.other}`,
    ],
    ['  its peak RSS MB (the CLI hosting the workers)', side.peak_rss_mb],
  ];
}

export function formatTable(result: BenchResult): string {
  const sections: string[] = [];
  const { emulator } = result;
  sections.push(
    `emulator: rate limit ${emulator.rate_limit_per_s}/s (submit and query), time_scale ${emulator.time_scale} ` +
      `(mean generation ${emulator.mean_generation_s} s); ${emulator.note}`,
  );
  if (result.pixelmill || result.naive)
    sections.push(renderTable(comparisonRows(result.pixelmill, result.naive)));
  const other: Cell[][] = [['figure', 'value']];
  if (result.capacity) {
    const { capacity } = result;
    other.push([
      `orchestrator images/s, rate limit ${capacity.rps}/s, time_scale ${capacity.time_scale} (${capacity.items} items)`,
      capacity.images_per_s,
    ]);
    other.push([
      '  its peak RSS MB (CLI, dev server)',
      `${capacity.side.peak_rss_mb}, ${capacity.side.temporal_server_peak_rss_mb ?? '-'}`,
    ]);
    const histories = capacity.side.histories;
    if (histories) {
      other.push([
        '  its history events, activities, workflow tasks per item',
        `${histories.events_per_item}, ${histories.activities_per_item}, ${histories.workflow_tasks_per_item}`,
      ]);
    }
    const cpu = capacity.cpu_ms_per_image;
    const emulatorCpu = capacity.emulator_cpu_ms_per_image;
    other.push([
      '  its CPU ms per image (CLI + dev server; the emulator)',
      `${cpu.pixelmill} (${cpu.pixelmill_cli} + ${cpu.temporal_server}); ${emulatorCpu.pixelmill}`,
    ]);
    const byThread = (ms: Record<string, number>): string =>
      Object.entries(ms)
        .map(([group, groupMs]) => `${group} ${groupMs}`)
        .join(', ');
    if (Object.keys(cpu.pixelmill_cli_by_thread).length > 0)
      other.push(['  its CLI CPU ms per image by thread', byThread(cpu.pixelmill_cli_by_thread)]);
    const baselines = [
      [
        'script',
        capacity.script,
        capacity.script_images_per_s,
        capacity.ratio_to_script,
        cpu.script,
        cpu.script_by_thread,
        emulatorCpu.script,
      ],
      [
        'checking script',
        capacity.checked_script,
        capacity.checked_script_images_per_s,
        capacity.ratio_to_checked_script,
        cpu.checked_script,
        cpu.checked_script_by_thread,
        emulatorCpu.checked_script,
      ],
    ] as const;
    for (const [name, side, imagesPerS, ratio, cpuMs, cpuByThread, emulatorMs] of baselines) {
      if (!side) continue;
      other.push([`${name} baseline images/s, same emulator`, imagesPerS]);
      other.push(['  its peak RSS MB', side.peak_rss_mb]);
      other.push(['  its CPU ms per image; the emulator', `${cpuMs}; ${emulatorMs}`]);
      if (cpuByThread) other.push(['  its CPU ms per image by thread', byThread(cpuByThread)]);
      other.push([`pixelmill images/s / the ${name}'s`, ratio]);
    }
    const { rounds } = capacity;
    if (rounds) {
      const each = (figure: (round: CapacityFigures) => number | null): string =>
        rounds.map((round) => figure(round) ?? '-').join(', ');
      other.push(['capacity rounds (medians above)', rounds.length]);
      other.push(['  pixelmill images/s, each round', each((round) => round.images_per_s)]);
      other.push([
        "  images/s / the checking script's, each round",
        each((round) => round.ratio_to_checked_script),
      ]);
      other.push([
        "  CPU per image / the checking script's, each round",
        each((round) => round.cpu_ratio_to_checked_script),
      ]);
    }
  }
  if (result.emulator_throughput)
    other.push([
      'emulator requests/s on one core',
      cell(result.emulator_throughput.requests_per_second as Cell),
    ]);
  if (result.big_manifest) {
    const big = result.big_manifest;
    other.push([`validate ${big.items} items s`, big.validate_s]);
    other.push([`validate items/s`, big.validate_items_per_s]);
    other.push([`validate peak RSS MB`, big.validate_peak_rss_mb]);
    other.push([`run of ${big.items} items started after s`, big.run_start_s]);
    other.push(['(dev server start-up s, not included)', big.dev_server_start_s]);
  }
  if (result.s3_output) other.push(...s3Rows(result.s3_output));
  if (result.incremental) {
    const { incremental } = result;
    other.push([`incremental: first run of ${incremental.items} items, wall s`, incremental.first_wall_s]);
    other.push([`  again with ${incremental.edited} prompts edited, wall s`, incremental.second_wall_s]);
    other.push(['  tasks it created', incremental.second_tasks]);
    other.push(['  credits it was charged', incremental.second_credits]);
    other.push([`plan of ${incremental.plan.items} items against their index, s`, incremental.plan.seconds]);
    other.push(['  its peak RSS MB', incremental.plan.peak_rss_mb]);
  }
  if (other.length > 1) sections.push(renderTable(other));
  if (result.adaptive) {
    const { adaptive } = result;
    sections.push(
      `adaptive: emulator limit ${adaptive.rate_per_s}/s per group, time_scale ${adaptive.time_scale} ` +
        `(mean generation ${adaptive.mean_generation_s} s), max_in_flight ${adaptive.max_in_flight ?? "pixelmill's default"}`,
    );
    if (adaptive.steady || adaptive.changing_limit || adaptive.two_runs || adaptive.naive)
      sections.push(renderTable(adaptiveRows(adaptive)));
    const details = adaptiveDetails(adaptive);
    if (details.length > 1) sections.push(renderTable(details));
  }
  if (result.targets.length) sections.push(targetsTable(result.targets));
  return `${sections.join('\n\n')}\n`;
}

/** Each target with its limit, its value and whether it was met. */
export function targetsTable(targets: Target[]): string {
  return renderTable([
    ['target', 'limit', 'value', 'met'],
    ...targets.map((t): Cell[] => [t.name, t.limit, t.value, t.met === null ? '-' : t.met ? 'yes' : 'NO']),
  ]);
}
