// Rate limits per API key and request class (submit; query = single GET and batch): a token bucket
// (per_second, burst) and, when per_minute is set, a fixed one-minute window beside it.
//
// Rates are real time on purpose: time_scale compresses the emulated service, not the client's
// request pacing, so a client tuned against the emulator keeps its pacing against the real one.
// The window is the clock's own minute (epoch ms / 60,000), as hosted services count "per key per
// minute": per_minute requests are admitted however fast they come, then 429 until the minute
// turns. A request must pass both checks, the 429 says the longer wait, and a refused request
// neither takes a token nor counts in its window.
//
// Limits can change while running (setLimits). A bucket keeps the tokens it holds, refilled at the
// old rate up to the change and cut to the new burst: a lower limit holds at once, a higher one
// refills at its rate rather than granting a fresh full burst. Windows count admitted requests
// even without a per_minute, so a window set or lowered mid-minute counts what it already admitted.
//
// State lives in typed arrays indexed by key and class, so checking a request allocates nothing.
import type { Clock } from '../core/clock.js';
import type { ValidRateLimitsChange } from './config.js';

export type RateClass = 'submit' | 'query';
const RATE_CLASSES: readonly RateClass[] = ['submit', 'query'];

export interface BucketConfig {
  readonly per_second: number;
  readonly burst: number;
  /** Absent: no minute window. */
  readonly per_minute?: number | undefined;
}

export type RateLimits = Readonly<Record<RateClass, BucketConfig>>;

const MINUTE_MS = 60_000;

export class RateLimiter {
  private readonly tokens: Float64Array;
  private readonly refilledAt: Float64Array;
  private readonly windowStart: Float64Array;
  private readonly windowCount: Float64Array;
  private current: RateLimits;

  constructor(
    keyCount: number,
    limits: RateLimits,
    private readonly clock: Clock,
  ) {
    this.tokens = new Float64Array(keyCount * 2);
    this.refilledAt = new Float64Array(keyCount * 2).fill(Number.NaN);
    this.windowStart = new Float64Array(keyCount * 2);
    this.windowCount = new Float64Array(keyCount * 2);
    this.current = frozenLimits(limits);
  }

  /** The limits in force. */
  get limits(): RateLimits {
    return this.current;
  }

  /** Takes one token; returns 0 when allowed, else the whole seconds (>= 1) to wait (Retry-After). */
  take(keyIndex: number, rateClass: RateClass): number {
    const slot = keyIndex * 2 + (rateClass === 'submit' ? 0 : 1);
    const { per_second: perSecond, burst, per_minute: perMinute } = this.current[rateClass];
    const now = this.clock.now();
    const tokens = this.refill(slot, now, perSecond, burst);
    // max: a clock that steps back stays in the later window rather than opening a fresh one.
    const start = Math.max(Math.floor(now / MINUTE_MS) * MINUTE_MS, this.windowStart[slot] ?? 0);
    if (start !== this.windowStart[slot]) {
      this.windowStart[slot] = start;
      this.windowCount[slot] = 0;
    }
    const count = this.windowCount[slot] ?? 0;
    const bucketWait = tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / perSecond));
    const windowWait =
      perMinute === undefined || count < perMinute
        ? 0
        : Math.max(1, Math.ceil((start + MINUTE_MS - now) / 1000));
    if (bucketWait > 0 || windowWait > 0) {
      this.tokens[slot] = tokens;
      return Math.max(bucketWait, windowWait);
    }
    this.tokens[slot] = tokens - 1;
    this.windowCount[slot] = count + 1;
    return 0;
  }

  /** Puts `limits` in force for the next request (see the header for what buckets keep). */
  setLimits(limits: RateLimits): void {
    const now = this.clock.now();
    RATE_CLASSES.forEach((rateClass, offset) => {
      const { per_second: perSecond, burst } = this.current[rateClass];
      const newBurst = limits[rateClass].burst;
      for (let slot = offset; slot < this.tokens.length; slot += 2) {
        // A bucket never used starts full at its first request, as at start-up.
        if (Number.isNaN(this.refilledAt[slot])) continue;
        this.tokens[slot] = Math.min(newBurst, this.refill(slot, now, perSecond, burst));
      }
    });
    this.current = frozenLimits(limits);
  }

  /** The tokens of `slot` at `now`, refilled since the last look; marks `now` as the last look. */
  private refill(slot: number, now: number, perSecond: number, burst: number): number {
    const last = this.refilledAt[slot] ?? Number.NaN;
    this.refilledAt[slot] = now;
    if (Number.isNaN(last)) return burst;
    // max(0, ...): a clock that steps back (NTP) must not drain a bucket.
    return Math.min(burst, (this.tokens[slot] ?? 0) + (Math.max(0, now - last) / 1000) * perSecond);
  }
}

/** `limits` with `change` applied: fields left out keep their value, `per_minute: null` removes it. */
export function changedLimits(limits: RateLimits, change: ValidRateLimitsChange): RateLimits {
  const changed = (rateClass: RateClass): BucketConfig => {
    const bucket = limits[rateClass];
    const fields = change[rateClass];
    if (!fields) return bucket;
    const perMinute = fields.per_minute === undefined ? bucket.per_minute : (fields.per_minute ?? undefined);
    return {
      per_second: fields.per_second ?? bucket.per_second,
      burst: fields.burst ?? bucket.burst,
      ...(perMinute === undefined ? {} : { per_minute: perMinute }),
    };
  };
  return { submit: changed('submit'), query: changed('query') };
}

/** A copy the limiter owns: the config it started from stays as it was, and callers cannot edit it. */
function frozenLimits(limits: RateLimits): RateLimits {
  const copy = (bucket: BucketConfig): BucketConfig =>
    Object.freeze({
      per_second: bucket.per_second,
      burst: bucket.burst,
      ...(bucket.per_minute === undefined ? {} : { per_minute: bucket.per_minute }),
    });
  return Object.freeze({ submit: copy(limits.submit), query: copy(limits.query) });
}
