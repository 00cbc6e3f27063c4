// The three providers as issue 39's benchmarks run them (bench/providers.ts at their documented
// limits, bench/providers-chaos.ts through the chaos suite's kills and restarts): each one's key,
// model, generation times, documented limit and the bound it sets, how to start its emulator, and
// how to read that emulator's counts and ground truth the same way whichever it is.
import { startBflEmulator, DEMO_BFL_KEY, DEFAULT_BFL_CONFIG } from '../emulator/bfl/index.js';
import { startFalEmulator, DEMO_FAL_KEY, DEFAULT_FAL_CONFIG } from '../emulator/fal/index.js';
import {
  startReplicateEmulator,
  DEMO_REPLICATE_TOKEN,
  DEFAULT_REPLICATE_CONFIG,
} from '../emulator/replicate/index.js';
import type { StartedEmulator } from '../emulator/providers.js';

export const PROVIDERS = ['fal', 'replicate', 'bfl'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface ProviderSetup {
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
  /**
   * The limit counts a task from its submit to its end (BFL's active tasks, queued ones included):
   * each holds a slot as long as the provider keeps it, its queue's order included, which the
   * emulator's record tells (bench/providers.ts, `held_bound_s`).
   */
  heldFromSubmit?: true;
  /** The calls per image issue 39 allows this provider without webhooks. */
  maxCallsPolling: number;
  /** The emulator's ground truth of what it accepted, one JSON line each with its `prompt`. */
  groundTruth: string;
  /** Its emulator at the documented limit, `config` merged over what the setup sets. */
  start(timeScale: number, config?: Record<string, unknown>): Promise<StartedEmulator>;
  /**
   * The chaos suite's faults in this emulator's knobs: 2% of API calls and downloads answered
   * 5xx, 2% of downloads cut off, 5% of generations failing (retried by the default policy).
   */
  chaosFaults: Record<string, unknown>;
  /** One ground-truth line read the same way for every provider. */
  truthOf(line: Record<string, unknown>): TaskTruth;
}

/** One task the emulator accepted, as its ground truth tells it at the end of a run. */
export interface TaskTruth {
  id: string;
  prompt: string;
  /** Created at the provider (emulator clock, epoch ms). */
  submittedAtMs: number;
  /** Ended with images. */
  succeeded: boolean;
  /** Its result fetched (fal) or its images downloaded whole (Replicate, BFL). */
  fetched: boolean;
  /** When it ended with images, and when that result was first fetched (epoch ms), if it was. */
  readyAtMs: number | null;
  fetchedAtMs: number | null;
  /** Its result gone (deleted, its URL expired) before anyone fetched it. */
  deletedUnfetched: boolean;
}

const mean = ([min, max]: readonly [number, number]): number => (min + max) / 2;
const FAL_MODEL = DEFAULT_FAL_CONFIG.models['fal-ai/flux/dev']!;
const number = (value: unknown): number | null => (typeof value === 'number' ? value : null);

const SERVER_ERRORS = 0.02;
const TRUNCATED = 0.02;
const FAILED_GENERATIONS = 0.05;

export const SETUPS: Record<Provider, ProviderSetup> = {
  fal: {
    keyEnv: 'FAL_KEY',
    key: DEMO_FAL_KEY,
    model: 'fal-ai/flux/dev',
    seconds: FAL_MODEL.seconds,
    queueSeconds: DEFAULT_FAL_CONFIG.generation.queue_seconds,
    limit: { atOnce: 40 },
    maxCallsPolling: 3.5,
    groundTruth: '/_emulator/requests',
    start: (timeScale, config = {}) =>
      startFalEmulator({ config: { time_scale: timeScale, port: 0, concurrency: 40, ...config } }),
    chaosFaults: {
      generation: { failure_rate: FAILED_GENERATIONS },
      faults: {
        server_error_rates: {
          submit: SERVER_ERRORS,
          status: SERVER_ERRORS,
          result: SERVER_ERRORS,
          cdn: SERVER_ERRORS,
        },
        truncate_download_rate: TRUNCATED,
      },
    },
    truthOf: (line) => {
      const deletedAt = number(line.result_deleted_at_ms);
      const fetched = line.result_fetched_at_ms !== null;
      return {
        id: String(line.request_id),
        prompt: String(line.prompt),
        submittedAtMs: Number(line.submitted_at_ms),
        succeeded: line.outcome === 'succeeded',
        fetched,
        readyAtMs: number(line.ended_at_ms),
        fetchedAtMs: number(line.result_fetched_at_ms),
        deletedUnfetched: line.phase === 'deleted' && !fetched && deletedAt !== null,
      };
    },
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
    start: (timeScale, config = {}) =>
      startReplicateEmulator({ config: { time_scale: timeScale, port: 0, ...config } }),
    chaosFaults: {
      generation: { failure_rate: FAILED_GENERATIONS },
      faults: {
        server_error_rate: {
          create: SERVER_ERRORS,
          get: SERVER_ERRORS,
          list: SERVER_ERRORS,
          delivery: SERVER_ERRORS,
        },
        truncate_download_rate: TRUNCATED,
      },
    },
    truthOf: (line) => ({
      id: String(line.id),
      prompt: String(line.prompt),
      submittedAtMs: Number(line.created_at_ms),
      succeeded: line.status === 'succeeded',
      fetched: Number(line.downloaded) > 0,
      readyAtMs: number(line.completed_at_ms),
      fetchedAtMs: number(line.result_fetched_at_ms),
      deletedUnfetched: Number(line.deleted_before_download) > 0,
    }),
  },
  bfl: {
    keyEnv: 'BFL_API_KEY',
    key: DEMO_BFL_KEY,
    model: 'flux-pro-1.1',
    seconds: DEFAULT_BFL_CONFIG.models['flux-pro-1.1']!.seconds,
    queueSeconds: DEFAULT_BFL_CONFIG.generation.queue_seconds,
    limit: { atOnce: 24 },
    heldFromSubmit: true,
    maxCallsPolling: 3,
    groundTruth: '/_emulator/tasks',
    start: (timeScale, config = {}) =>
      startBflEmulator({ config: { time_scale: timeScale, port: 0, ...config } }),
    chaosFaults: {
      generation: { failure_rate: FAILED_GENERATIONS },
      faults: {
        server_error_rate: { submit: SERVER_ERRORS, get_result: SERVER_ERRORS, delivery: SERVER_ERRORS },
        truncate_download_rate: TRUNCATED,
      },
    },
    truthOf: (line) => {
      const expiresAt = number(line.sample_expires_at_ms);
      const fetched = line.sample_fetched_at_ms !== null;
      return {
        id: String(line.id),
        prompt: String(line.prompt),
        submittedAtMs: Number(line.submitted_at_ms),
        succeeded: line.status === 'Ready',
        fetched,
        readyAtMs: number(line.ended_at_ms),
        fetchedAtMs: number(line.sample_fetched_at_ms),
        // The bench's emulators run on the system clock.
        deletedUnfetched: expiresAt !== null && !fetched && Date.now() >= expiresAt,
      };
    },
  },
};

/** Seconds of one mean generation (queue plus run), compressed. */
export function generationSeconds(setup: ProviderSetup, timeScale: number): number {
  return (mean(setup.seconds) + mean(setup.queueSeconds)) * timeScale;
}

/** Seconds the documented limit needs for `items` of mean generation `generationS`. */
export function boundSeconds(setup: ProviderSetup, items: number, generationS: number): number {
  if ('perSecond' in setup.limit)
    return Math.max(0, items - setup.limit.burst) / setup.limit.perSecond + generationS;
  return Math.ceil(items / setup.limit.atOnce) * generationS;
}

/** What every provider emulator's stats have in common, and the retention counts each names its way. */
export interface EmulatorCounts {
  requests: Record<string, Record<string, number>>;
  /** fal: results and CDN images deleted before anyone fetched them. */
  retention?: {
    results_deleted_unfetched?: number;
    images_deleted_undownloaded?: number;
    images_downloaded?: number;
    ready_to_fetch_share?: RetentionShareFigure;
  };
  /** Replicate: output files removed (its hour) before anyone downloaded them. */
  outputs?: {
    deleted_before_download?: number;
    downloaded?: number;
    ready_to_fetch_share?: RetentionShareFigure;
  };
  /** BFL: sample URLs expired (their ten minutes) before anyone downloaded them. */
  samples?: {
    expired_before_download?: number;
    downloads?: number;
    ready_to_fetch_share?: RetentionShareFigure;
  };
}

/** The emulators' ready-to-first-fetch over retention (emulator/core/stats.ts, retentionShare). */
export interface RetentionShareFigure {
  results: number;
  max: number | null;
  p99: number | null;
}

/** Results the emulator counted as deleted by its retention before anyone fetched them. */
export function lostToRetention(stats: EmulatorCounts): number {
  return (
    (stats.retention?.results_deleted_unfetched ?? 0) +
    (stats.retention?.images_deleted_undownloaded ?? 0) +
    (stats.outputs?.deleted_before_download ?? 0) +
    (stats.samples?.expired_before_download ?? 0)
  );
}

/** Images downloaded whole from the provider's file host so far. */
export function imagesDownloaded(stats: EmulatorCounts): number {
  return stats.retention?.images_downloaded ?? stats.outputs?.downloaded ?? stats.samples?.downloads ?? 0;
}

export function retentionShareOf(stats: EmulatorCounts): RetentionShareFigure {
  return (
    stats.retention?.ready_to_fetch_share ??
    stats.outputs?.ready_to_fetch_share ??
    stats.samples?.ready_to_fetch_share ?? { results: 0, max: null, p99: null }
  );
}

/**
 * API calls the emulator answered, by route and in all, and its 429s: result images come from the
 * provider's file host (downloads, not API calls), and the emulator's own routes are no API.
 */
export function apiCalls(stats: EmulatorCounts): {
  total: number;
  byRoute: Record<string, number>;
  refused: number;
} {
  const byRoute: Record<string, number> = {};
  let total = 0;
  let refused = 0;
  for (const [route, byStatus] of Object.entries(stats.requests)) {
    if (route.includes('/_emulator/')) continue;
    if (/results|delivery|media|files/.test(route) && !route.startsWith('GET /v1/predictions')) continue;
    const count = Object.values(byStatus).reduce((sum, n) => sum + n, 0);
    byRoute[route] = count;
    total += count;
    refused += byStatus['429'] ?? 0;
  }
  return { total, byRoute, refused };
}

/** Every task the emulator at `url` accepted, from its ground truth. */
export async function tasksAt(url: string, setup: ProviderSetup): Promise<TaskTruth[]> {
  const text = await (await fetch(`${url}${setup.groundTruth}`)).text();
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => setup.truthOf(JSON.parse(line) as Record<string, unknown>));
}
