// Rates derived from successive progress samples: API calls per second (against the run's limit),
// images per minute and an ETA. The workflows hold only totals, so a rate is the change of a total
// over a sliding window of samples. Time is passed in, so tests feed samples without waiting.

/** Totals at one moment; all of them only ever grow in a run. */
export interface RateSample {
  /** Epoch milliseconds. */
  at: number;
  apiCalls: number;
  images: number;
  /** Items in a final state (stored, failed, cancelled, expired, skipped). */
  finished: number;
}

export interface Rates {
  /** API calls per second over the last `requestsWindowS`; undefined until measurable. */
  requestsPerSecond?: number;
  requestsWindowS?: number;
  imagesPerMinute?: number;
  /** Seconds until every item is final at the recent pace; undefined while unknown. */
  etaSeconds?: number;
}

export interface RateWindows {
  /**
   * The request rate is measured over this span: long enough that a paced stream reads at or
   * under its limit (the limit holds per second to within one call per worker; a few calls
   * counted at once when a retried activity ends would make a short window jump past it).
   */
  requestsMs: number;
  /** Images/minute and the ETA are measured over this span (long: they should not jump). */
  throughputMs: number;
  /** A rate needs samples at least this far apart, else it is noise. */
  minSpanMs: number;
  /** An ETA needs this many items finished within the window: one early item says little. */
  etaMinItems: number;
}

export const DEFAULT_WINDOWS: RateWindows = {
  requestsMs: 30_000,
  throughputMs: 60_000,
  minSpanMs: 2_000,
  etaMinItems: 5,
};

export class RateTracker {
  readonly #samples: RateSample[] = [];

  constructor(private readonly windows: RateWindows = DEFAULT_WINDOWS) {}

  /**
   * Adds a sample. Totals are held at their highest value seen: a shard that finishes between the
   * run's query and its own drops out of one sample, which must not read as negative progress.
   */
  add(sample: RateSample): void {
    const last = this.#samples.at(-1);
    if (last && sample.at <= last.at) return;
    this.#samples.push(
      last
        ? {
            at: sample.at,
            apiCalls: Math.max(last.apiCalls, sample.apiCalls),
            images: Math.max(last.images, sample.images),
            finished: Math.max(last.finished, sample.finished),
          }
        : { ...sample },
    );
    const keepFrom = sample.at - Math.max(this.windows.requestsMs, this.windows.throughputMs);
    while (this.#samples[0]!.at < keepFrom) this.#samples.shift();
  }

  /** The rates as of the newest sample; `remaining` items are not yet final. */
  rates(remaining: number): Rates {
    const newest = this.#samples.at(-1);
    if (!newest) return {};
    const rates: Rates = {};
    const calls = this.#perMs(newest, this.windows.requestsMs, (sample) => sample.apiCalls);
    if (calls !== undefined) {
      rates.requestsPerSecond = calls * 1000;
      rates.requestsWindowS = this.windows.requestsMs / 1000;
    }
    const images = this.#perMs(newest, this.windows.throughputMs, (sample) => sample.images);
    if (images !== undefined) rates.imagesPerMinute = images * 60_000;
    const finishing = this.#perMs(newest, this.windows.throughputMs, (sample) => sample.finished);
    const finishedInWindow = newest.finished - this.#oldestWithin(newest, this.windows.throughputMs).finished;
    if (remaining === 0) rates.etaSeconds = 0;
    else if (finishing !== undefined && finishing > 0 && finishedInWindow >= this.windows.etaMinItems)
      rates.etaSeconds = remaining / finishing / 1000;
    return rates;
  }

  #oldestWithin(newest: RateSample, windowMs: number): RateSample {
    return this.#samples.find((sample) => sample.at >= newest.at - windowMs) ?? newest;
  }

  /** Change per millisecond of `value` from the oldest sample within `windowMs` to `newest`. */
  #perMs(newest: RateSample, windowMs: number, value: (sample: RateSample) => number): number | undefined {
    const oldest = this.#oldestWithin(newest, windowMs);
    const span = newest.at - oldest.at;
    if (span < this.windows.minSpanMs) return undefined;
    return (value(newest) - value(oldest)) / span;
  }
}
