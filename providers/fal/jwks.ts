// fal's webhook signing keys: the JWKS at a configurable URL (fal documents
// https://rest.fal.ai/.well-known/jwks.json; the emulator serves its own), as Ed25519 public keys,
// cached for at most 24 hours as fal's webhook page advises. A signature that none of the cached
// keys verifies may come from a key fal added since (a rotation): the JWKS is then fetched again,
// these fetches at most once a minute, so a stream of forged webhooks cannot become one of fetches.
// A fetch that fails throws: the receiver answers 500 and fal delivers again later, instead of a
// 401 that would tell fal the webhook is unwanted.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { request } from 'undici';
import { PixelmillError } from '../../common/errors.js';
import { JwksSchema } from './wire.js';

export const JWKS_MAX_AGE_MS = 24 * 60 * 60_000;
/** The shortest gap between two fetches asked for by a signature no cached key verifies. */
export const JWKS_REFETCH_GAP_MS = 60_000;
const FETCH_TIMEOUT_MS = 10_000;
const MAX_JWKS_BYTES = 64 * 1024;

/** The keys could not be had: a transient failure for the receiver (fal retries the delivery). */
export class FalJwksUnavailableError extends PixelmillError {
  override name = 'FalJwksUnavailableError';
  readonly code = 'fal_jwks_unavailable';
  readonly retryable = true;
}

export interface JwksCacheOptions {
  url: string;
  maxAgeMs?: number;
  refetchGapMs?: number;
}

export class JwksCache {
  readonly #url: string;
  readonly #maxAgeMs: number;
  readonly #refetchGapMs: number;
  #keys: KeyObject[] | undefined;
  #fetchedAt = -Infinity;
  #refetchedAt = -Infinity;
  #inFlight: Promise<KeyObject[]> | undefined;

  constructor(options: JwksCacheOptions) {
    this.#url = options.url;
    this.#maxAgeMs = options.maxAgeMs ?? JWKS_MAX_AGE_MS;
    this.#refetchGapMs = options.refetchGapMs ?? JWKS_REFETCH_GAP_MS;
  }

  /** The cached keys while younger than the maximum age at `nowMs`, else freshly fetched ones. */
  async keys(nowMs: number): Promise<KeyObject[]> {
    if (this.#keys !== undefined && nowMs - this.#fetchedAt < this.#maxAgeMs) return this.#keys;
    return this.#fetch(nowMs);
  }

  /** Keys fetched again for a signature the cached ones do not verify; undefined when fetched too recently. */
  async refetched(nowMs: number): Promise<KeyObject[] | undefined> {
    if (this.#inFlight) return this.#inFlight;
    if (nowMs - this.#refetchedAt < this.#refetchGapMs) return undefined;
    this.#refetchedAt = nowMs;
    return this.#fetch(nowMs);
  }

  #fetch(nowMs: number): Promise<KeyObject[]> {
    // Concurrent webhooks share one fetch.
    this.#inFlight ??= load(this.#url)
      .then((keys) => {
        this.#keys = keys;
        this.#fetchedAt = nowMs;
        return keys;
      })
      .finally(() => {
        this.#inFlight = undefined;
      });
    return this.#inFlight;
  }
}

async function load(url: string): Promise<KeyObject[]> {
  const fail = (why: string) =>
    new FalJwksUnavailableError(`fal's webhook keys (${url}) could not be read: ${why}`);
  let text: string;
  try {
    const response = await request(url, {
      method: 'GET',
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_JWKS_BYTES) {
        response.body.destroy();
        throw fail(`the answer is over ${MAX_JWKS_BYTES} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    if (response.statusCode !== 200) throw fail(`HTTP ${response.statusCode}`);
    text = Buffer.concat(chunks).toString('utf8');
  } catch (error) {
    if (error instanceof FalJwksUnavailableError) throw error;
    throw fail(error instanceof Error ? error.message : String(error));
  }
  let parsed;
  try {
    parsed = JwksSchema.safeParse(JSON.parse(text));
  } catch {
    throw fail('the answer is not JSON');
  }
  if (!parsed.success) throw fail('the answer is not a JWKS');
  const keys = parsed.data.keys.flatMap((jwk) => {
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') return [];
    try {
      return [createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' })];
    } catch {
      return [];
    }
  });
  if (keys.length === 0) throw fail('it holds no Ed25519 key');
  return keys;
}
