// Per-minute limits of POST /v1/images/generations, per account: a token bucket of requests (RPM,
// when set) and one of images (IPM; a call takes `n`), each refilled continuously over a minute
// (the rate-limits guide: limits "replenish" rather than reset on the minute). Every answer carries
// the guide's headers for requests, and the same three for images (`x-ratelimit-*-images`); a
// refusal is a 429 with them and `retry-after`.
//
// Rates are real time on purpose, as in the other emulators: time_scale compresses the emulated
// service, not the client's pacing.
import type { OpenAIConfig } from './config.js';

type Unit = 'requests' | 'images';

interface Bucket {
  tokens: number;
  at: number;
}

export type Admission =
  | { ok: true; headers: Record<string, string> }
  | { ok: false; unit: Unit; limit: number; waitSeconds: number; headers: Record<string, string> };

const MINUTE_MS = 60_000;

/** The guide's duration format: `1s`, `6m0s`, `120ms`. */
export function resetText(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  return `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}

export class ImageRateLimiter {
  readonly #buckets = new Map<string, Bucket>();

  constructor(private readonly limits: () => OpenAIConfig['limits']) {}

  /** Takes one request of `n` images for `account` at `now`, or says which limit refuses it. */
  take(account: string, n: number, now: number): Admission {
    const { images_per_minute: ipm, requests_per_minute: rpm } = this.limits();
    const requests = rpm === null ? undefined : this.#refill(`${account}/requests`, rpm, now);
    const images = this.#refill(`${account}/images`, ipm, now);
    const headers = (): Record<string, string> => ({
      ...(requests && rpm !== null ? this.#headers('requests', requests, rpm) : {}),
      ...this.#headers('images', images, ipm),
    });
    if (requests && rpm !== null && requests.tokens < 1)
      return {
        ok: false,
        unit: 'requests',
        limit: rpm,
        waitSeconds: wait(requests, 1, rpm),
        headers: headers(),
      };
    // A call of more images than the whole limit waits for a full bucket, then runs.
    const cost = Math.min(n, ipm);
    if (images.tokens < cost)
      return {
        ok: false,
        unit: 'images',
        limit: ipm,
        waitSeconds: wait(images, cost, ipm),
        headers: headers(),
      };
    if (requests) requests.tokens -= 1;
    images.tokens -= cost;
    return { ok: true, headers: headers() };
  }

  #headers(unit: Unit, bucket: Bucket, limit: number): Record<string, string> {
    return {
      [`x-ratelimit-limit-${unit}`]: String(limit),
      [`x-ratelimit-remaining-${unit}`]: String(Math.floor(bucket.tokens)),
      [`x-ratelimit-reset-${unit}`]: resetText(((limit - bucket.tokens) * MINUTE_MS) / limit),
    };
  }

  #refill(key: string, limit: number, now: number): Bucket {
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = { tokens: limit, at: now };
      this.#buckets.set(key, bucket);
      return bucket;
    }
    // max(0, ...): a clock that steps back must not drain a bucket.
    const elapsed = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(limit, bucket.tokens + (elapsed * limit) / MINUTE_MS);
    bucket.at = now;
    return bucket;
  }
}

function wait(bucket: Bucket, cost: number, limit: number): number {
  return Math.max(1, Math.ceil(((cost - bucket.tokens) * 60) / limit));
}
