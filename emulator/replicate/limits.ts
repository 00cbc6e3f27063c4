// Request limits per API token: creates and every other endpoint each have a token bucket
// (`requests` per `window_seconds`, at most `burst` held): "600 requests per minute" for creates,
// "3000" for the rest, "short bursts" allowed (docs/topics/predictions/rate-limits, read 2026-11-26).
// While an account's credit is below `low_credit.below_usd`, its creates use the stronger
// low-credit bucket instead ("6 requests per minute with a burst of 1" below $5.0, as a real 429
// quoted in client code says).
//
// Rates are real time on purpose, as in the first emulator: time_scale compresses the emulated
// service, not the client's pacing. Limits can change while running: a bucket keeps the tokens it
// holds, cut to the new burst, so a lower limit holds at once and a higher one refills at its rate.
import type { LimitConfig, ReplicateConfig } from './config.js';

export type LimitClass = 'create' | 'other';
export type Limits = ReplicateConfig['limits'];

interface Bucket {
  tokens: number;
  at: number;
}

export type Admission =
  | { ok: true; remaining: number; resetSeconds: number }
  | { ok: false; waitSeconds: number; lowCredit: boolean };

const perSecond = (limit: LimitConfig): number => limit.requests / limit.window_seconds;

export class RequestLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private current: Limits) {}

  get limits(): Limits {
    return this.current;
  }

  /** Takes one request of `limitClass` for token `tokenIndex` at `now` (ms), or says how long to wait. */
  take(tokenIndex: number, limitClass: LimitClass, lowCredit: boolean, now: number): Admission {
    const useLow = limitClass === 'create' && lowCredit && this.current.low_credit !== null;
    const limit = useLow ? this.current.low_credit!.create : this.current[limitClass];
    const key = `${tokenIndex}/${useLow ? 'low' : limitClass}`;
    const bucket = this.refill(key, limit, now);
    const rate = perSecond(limit);
    if (bucket.tokens < 1) {
      return {
        ok: false,
        waitSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / rate)),
        lowCredit: useLow,
      };
    }
    bucket.tokens -= 1;
    return {
      ok: true,
      remaining: Math.floor(bucket.tokens),
      resetSeconds: Math.ceil((limit.burst - bucket.tokens) / rate),
    };
  }

  /** Puts `limits` in force for the next request (see the header for what buckets keep). */
  setLimits(limits: Limits, now: number): void {
    for (const [key, bucket] of this.buckets) {
      const [, kind] = key.split('/') as [string, 'create' | 'other' | 'low'];
      const old = kind === 'low' ? this.current.low_credit?.create : this.current[kind];
      const next = kind === 'low' ? limits.low_credit?.create : limits[kind];
      if (!old || !next) {
        this.buckets.delete(key);
        continue;
      }
      this.refill(key, old, now);
      bucket.tokens = Math.min(bucket.tokens, next.burst);
    }
    this.current = limits;
  }

  private refill(key: string, limit: LimitConfig, now: number): Bucket {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: limit.burst, at: now };
      this.buckets.set(key, bucket);
      return bucket;
    }
    // max(0, ...): a clock that steps back must not drain a bucket.
    const elapsed = Math.max(0, now - bucket.at) / 1000;
    bucket.tokens = Math.min(limit.burst, bucket.tokens + elapsed * perSecond(limit));
    bucket.at = now;
    return bucket;
  }
}

/** Python's str() of a float, as the low-credit message prints the threshold ("$5.0"). */
const pythonFloat = (n: number): string => (Number.isInteger(n) ? `${n}.0` : String(n));

/** The `detail` of a 429 (the rate-limit page shows both wordings over time). */
export function throttledDetail(limits: Limits, admission: Extract<Admission, { ok: false }>): string {
  if (admission.lowCredit && limits.low_credit) {
    const { create, below_usd: below } = limits.low_credit;
    const perMinute = Math.round((create.requests * 60) / create.window_seconds);
    return (
      `Request was throttled. Your rate limit for creating predictions is reduced to ${perMinute} requests ` +
      `per minute with a burst of ${create.burst} requests while you have less than $${pythonFloat(below)} in credit.`
    );
  }
  const n = admission.waitSeconds;
  return limits.throttle_message === 'resets_in'
    ? `Request was throttled. Your rate limit resets in ~${n}s.`
    : `Request was throttled. Expected available in ${n} second${n === 1 ? '' : 's'}.`;
}
