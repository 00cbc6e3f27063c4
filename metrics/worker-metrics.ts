// pixelmill's own metrics of a worker process, recorded on the Temporal SDK's metric meter so that
// one Prometheus endpoint serves them beside the SDK's (metrics/serve.ts). The words are the
// report's (summary.json, `status --json`): items by state, images, check failures by check and
// level, the rate in force per endpoint group. Labels are bounded: a provider, an endpoint group,
// a status, a state, a check; never an item, a task, a key or a URL (the API account's
// fingerprint is added to every metric by the worker, as a global tag).
//
// Recording never fails or slows a run: each is a native counter add, guarded, and the SDK's
// runtime may be gone when a late activity ends (then nothing is recorded).
import {
  noopMetricMeter,
  type MetricCounter,
  type MetricGauge,
  type MetricMeter,
  type MetricTags,
} from '@temporalio/common';
import {
  InvalidResponseError,
  isImageApiError,
  NetworkError,
  RateLimitError,
  TimeoutError,
} from '../api/index.js';
import type { ApiGroup } from '../governor/types.js';
import type { OutcomeLine } from '../runstate/index.js';

/**
 * The metric names, as Prometheus shows them: the exporter adds `_total` to every counter
 * (serve.ts, countersTotalSuffix), so the counters here are named without it.
 */
export const METRIC_NAMES = {
  apiCalls: 'pixelmill_api_calls',
  rateLimited: 'pixelmill_api_rate_limited',
  rateInForce: 'pixelmill_rate_in_force_per_second',
  items: 'pixelmill_items',
  imagesStored: 'pixelmill_images_stored',
  storedBytes: 'pixelmill_stored_bytes',
  checkFailures: 'pixelmill_check_failures',
} as const;

/** A run's rate group: the governor's endpoint groups, or `all` for a fixed requests_per_second. */
export type RateGroup = ApiGroup | 'all';

/** An item's state in the counts: its outcome's status, or `reused` when an incremental run carried it over. */
export type ItemState = OutcomeLine['status'] | 'reused';

/**
 * How a call was answered, as a bounded label: `ok`, the HTTP status of an error answer (`429`,
 * `500`, `404`...), or what came instead of an answer (`timeout`, `network`, `invalid_response`:
 * a 2xx that did not parse), `error` for anything else.
 */
export function callStatus(error: unknown): string {
  if (error === undefined) return 'ok';
  if (error instanceof InvalidResponseError) return 'invalid_response';
  if (isImageApiError(error) && error.httpStatus !== undefined) return String(error.httpStatus);
  if (error instanceof TimeoutError) return 'timeout';
  if (error instanceof NetworkError) return 'network';
  return 'error';
}

export class WorkerMetrics {
  readonly #apiCalls: MetricCounter;
  readonly #rateLimited: MetricCounter;
  readonly #rateInForce: MetricGauge;
  readonly #items: MetricCounter;
  readonly #imagesStored: MetricCounter;
  readonly #storedBytes: MetricCounter;
  readonly #checkFailures: MetricCounter;

  constructor(meter: MetricMeter) {
    const counter = (name: string, description: string) => meter.createCounter(name, undefined, description);
    this.#apiCalls = counter(
      METRIC_NAMES.apiCalls,
      'API calls this worker made, by endpoint group and how they were answered',
    );
    this.#rateLimited = counter(
      METRIC_NAMES.rateLimited,
      '429 answers, by endpoint group and the limit they were over (rate, concurrency)',
    );
    this.#rateInForce = meter.createGauge(
      METRIC_NAMES.rateInForce,
      'float',
      undefined,
      "calls per second the account may make, per endpoint group (`all`: a fixed run's requests_per_second)",
    );
    this.#items = counter(
      METRIC_NAMES.items,
      "items whose outcome this worker recorded, by the report's state",
    );
    this.#imagesStored = counter(METRIC_NAMES.imagesStored, 'images this worker stored and recorded');
    this.#storedBytes = counter(METRIC_NAMES.storedBytes, 'bytes of the images this worker stored');
    this.#checkFailures = counter(
      METRIC_NAMES.checkFailures,
      'image checks failed by stored images, by check and level',
    );
  }

  /** One API call of `group`, answered as `error` says (nothing: success). */
  apiCall(group: ApiGroup, provider: string | undefined, error?: unknown): void {
    guarded(() => {
      const tags = { provider: provider ?? 'apimart', group };
      this.#apiCalls.add(1, { ...tags, status: callStatus(error) });
      if (error instanceof RateLimitError) this.#rateLimited.add(1, { ...tags, limit: error.limit });
    });
  }

  /** The rate in force for `group`, as this worker last learned it. */
  rateInForce(group: RateGroup, provider: string | undefined, perSecond: number): void {
    if (!Number.isFinite(perSecond)) return;
    guarded(() => this.#rateInForce.set(perSecond, { provider: provider ?? 'apimart', group }));
  }

  /** Outcome lines recorded for the first time: their items, images, bytes and check failures. */
  outcomes(provider: string | undefined, lines: readonly OutcomeLine[]): void {
    if (lines.length === 0) return;
    const states = new Map<ItemState, number>();
    const failedChecks = new Map<string, MetricTags & { check: string; level: string }>();
    const failedCounts = new Map<string, number>();
    let images = 0;
    let bytes = 0;
    for (const line of lines) {
      // A carried-over item was stored by an earlier run: reused here, its images not stored again.
      const state: ItemState = line.reused_from !== undefined ? 'reused' : line.status;
      states.set(state, (states.get(state) ?? 0) + 1);
      if (state === 'reused') continue;
      for (const image of line.images) {
        images++;
        bytes += image.bytes;
        for (const { check, level } of image.checks ?? []) {
          const key = `${check} ${level}`;
          failedChecks.set(key, { check, level });
          failedCounts.set(key, (failedCounts.get(key) ?? 0) + 1);
        }
      }
    }
    // One add per state and check, not per line: a store batch records hundreds at once.
    guarded(() => {
      const tags = { provider: provider ?? 'apimart' };
      for (const [state, count] of states) this.#items.add(count, { ...tags, state });
      if (images > 0) this.#imagesStored.add(images, tags);
      if (bytes > 0) this.#storedBytes.add(bytes, tags);
      for (const [key, checkTags] of failedChecks)
        this.#checkFailures.add(failedCounts.get(key)!, { ...tags, ...checkTags });
    });
  }
}

/** Records nothing: a worker started without --metrics-port, a test, a script. */
export const NO_METRICS = new WorkerMetrics(noopMetricMeter);

function guarded(record: () => void): void {
  try {
    record();
  } catch {
    // The SDK's runtime is shutting down (the worker is stopping): a metric lost, never a run.
  }
}
