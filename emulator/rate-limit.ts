// Token-bucket rate limits per API key and request class (submit; query = single GET and batch).
//
// Rates are real time on purpose: time_scale compresses the emulated service, not the client's
// request pacing, so a client tuned against the emulator keeps its pacing against the real one.
// State lives in two typed arrays indexed by key, so checking a request allocates nothing.
import type { Clock } from './clock.js';

export type RateClass = 'submit' | 'query';

export interface BucketConfig {
  readonly per_second: number;
  readonly burst: number;
}

export class RateLimiter {
  private readonly tokens: Float64Array;
  private readonly refilledAt: Float64Array;

  constructor(
    keyCount: number,
    private readonly limits: Readonly<Record<RateClass, BucketConfig>>,
    private readonly clock: Clock,
  ) {
    this.tokens = new Float64Array(keyCount * 2);
    this.refilledAt = new Float64Array(keyCount * 2).fill(Number.NaN);
  }

  /** Takes one token; returns 0 when allowed, else the whole seconds (>= 1) to wait (Retry-After). */
  take(keyIndex: number, rateClass: RateClass): number {
    const slot = keyIndex * 2 + (rateClass === 'submit' ? 0 : 1);
    const { per_second: perSecond, burst } = this.limits[rateClass];
    const now = this.clock.now();
    const last = this.refilledAt[slot] ?? Number.NaN;
    // max(0, ...): a clock that steps back (NTP) must not drain a bucket.
    let tokens = Number.isNaN(last)
      ? burst
      : Math.min(burst, (this.tokens[slot] ?? 0) + (Math.max(0, now - last) / 1000) * perSecond);
    this.refilledAt[slot] = now;
    if (tokens >= 1) {
      tokens -= 1;
      this.tokens[slot] = tokens;
      return 0;
    }
    this.tokens[slot] = tokens;
    return Math.max(1, Math.ceil((1 - tokens) / perSecond));
  }
}
