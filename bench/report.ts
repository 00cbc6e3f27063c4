// What `npm run bench` reports: one JSON object (BenchResult) and the same figures as a plain
// text table, with the targets of issue #6 checked against the pixelmill side.
import type { BigManifestFigures } from './big-manifest.js';
import type { SideResult } from './compare.js';
import { target, type Target } from './figures.js';

export interface CapacityResult {
  items: number;
  /** The manifest's and the emulator's rate limit: high enough not to bind. */
  rps: number;
  time_scale: number;
  images_per_s: number;
  side: SideResult;
}

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
  naive: SideResult | null;
  capacity: CapacityResult | null;
  emulator_throughput: Record<string, unknown> | null;
  big_manifest: BigManifestFigures | null;
  targets: Target[];
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
  if (result.big_manifest)
    targets.push(
      target(`run of ${result.big_manifest.items} items started (s)`, result.big_manifest.run_start_s, 10),
    );
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
    ['largest workflow history', ...both((s) => s.histories?.largest.events)],
    ['re-hosting MB/s', ...both((s) => s.rehost_mb_per_s)],
    ...(pixelmill?.webhook_deliveries
      ? [['webhooks delivered', pixelmill.webhook_deliveries.delivered, null] as Cell[]]
      : []),
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
    other.push(['  its peak RSS MB', capacity.side.peak_rss_mb]);
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
  if (other.length > 1) sections.push(renderTable(other));
  if (result.targets.length) {
    sections.push(
      renderTable([
        ['target', 'limit', 'value', 'met'],
        ...result.targets.map((t): Cell[] => [
          t.name,
          t.limit,
          t.value,
          t.met === null ? '-' : t.met ? 'yes' : 'NO',
        ]),
      ]),
    );
  }
  return `${sections.join('\n\n')}\n`;
}
