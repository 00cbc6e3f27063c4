// The figures a comparison reports, computed the same way for pixelmill and the baseline: API
// calls per image by endpoint and 429s (from the emulator's own counters, not the client's), the
// theoretical bound of a run, and the targets of issue #6.
import type { EmulatorStats } from '../emulator/apimart/routes/admin.js';

/** Calls an image needs at the least: submit + one GET when polling, the submit alone with webhooks. */
export function idealCallsPerImage(webhooks: boolean): number {
  return webhooks ? 1 : 2;
}

export interface Bound {
  seconds: number;
  /** How it was computed, for the reader of the JSON. */
  formula: string;
}

/** No client can beat this: its API calls at the rate limit, plus one generation time. */
export function boundOf(images: number, rps: number, webhooks: boolean, generationSeconds: number): Bound {
  const calls = idealCallsPerImage(webhooks);
  return {
    seconds: round((calls * images) / rps + generationSeconds, 2),
    formula: `${calls} calls/image x ${images} images / ${rps} rps + ${round(generationSeconds, 2)} s generation`,
  };
}

export interface ApiCallFigures {
  total: number;
  per_image: number;
  /** `{ "<METHOD> <route>": { calls, per_image } }`, every status counted. */
  by_endpoint: Record<string, { calls: number; per_image: number }>;
  http_429: number;
  /** Non-2xx answers other than 429, by status. */
  other_errors: Record<string, number>;
  /** Result downloads served (not API calls: the result host is not rate limited). */
  downloads: number;
}

const isApiRoute = (label: string): boolean => label.split(' ')[1]?.startsWith('/v1/') ?? false;
const isDownload = (label: string): boolean => label.split(' ')[1]?.startsWith('/results/') ?? false;

export function apiCallFigures(stats: EmulatorStats, images: number): ApiCallFigures {
  const perImage = (calls: number): number => (images > 0 ? round(calls / images, 4) : 0);
  const figures: ApiCallFigures = {
    total: 0,
    per_image: 0,
    by_endpoint: {},
    http_429: 0,
    other_errors: {},
    downloads: 0,
  };
  for (const [label, byStatus] of Object.entries(stats.requests)) {
    const calls = Object.values(byStatus).reduce((sum, count) => sum + count, 0);
    if (isDownload(label)) figures.downloads += byStatus['200'] ?? 0;
    if (!isApiRoute(label)) continue;
    figures.total += calls;
    figures.by_endpoint[label] = { calls, per_image: perImage(calls) };
    for (const [status, count] of Object.entries(byStatus)) {
      if (status === '429') figures.http_429 += count;
      else if (!status.startsWith('2'))
        figures.other_errors[status] = (figures.other_errors[status] ?? 0) + count;
    }
  }
  figures.per_image = perImage(figures.total);
  return figures;
}

export interface Target {
  name: string;
  limit: string;
  value: number | null;
  met: boolean | null;
}

export function target(name: string, value: number | null, max: number): Target {
  return { name, limit: `<= ${max}`, value, met: value === null ? null : value <= max };
}

export function targetAtLeast(name: string, value: number | null, min: number): Target {
  return { name, limit: `>= ${min}`, value, met: value === null ? null : value >= min };
}

/** `values` with `f` applied to each value, keys kept. */
export function mapValues<K extends string>(
  values: Record<K, number>,
  f: (value: number) => number,
): Record<K, number> {
  return Object.fromEntries(Object.entries<number>(values).map(([key, value]) => [key, f(value)])) as Record<
    K,
    number
  >;
}

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** The median of `values`; 0 when there are none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  if (sorted.length === 0) return 0;
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)]!;
}

/**
 * Records of the same shape, folded into one: each number the median of that number across them
 * (nested records likewise); a figure some of them lack (null) is the median of those that have it.
 */
export function medianOfEach<T>(records: readonly T[]): T {
  const numbers = records.filter((value): value is T & number => typeof value === 'number');
  if (numbers.length > 0) return median(numbers) as T;
  const first = records.find((value) => value !== null && value !== undefined);
  if (typeof first !== 'object' || first === null) return records[0]!;
  const fields = Object.keys(first).map((key) => [
    key,
    medianOfEach(records.map((record) => (record as Record<string, unknown> | null)?.[key] ?? null)),
  ]);
  return Object.fromEntries(fields) as T;
}

/** The p-th percentile (0-100) of ascending `sorted` values, nearest rank; 0 when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
