// fal's webhook signature: Ed25519 over `request_id + "\n" + user_id + "\n" + timestamp + "\n" +
// sha256_hex(raw body)`, hex-encoded in X-Fal-Webhook-Signature beside X-Fal-Webhook-Request-Id,
// -User-Id and -Timestamp (Unix seconds); the public keys published as a JWKS (OKP, Ed25519, `x`
// base64url, a `kid`) that the emulator serves at /.well-known/jwks.json on its own URL.
//
// Keys are Ed25519 seeds: from the config, else derived from `seed` (so a restarted emulator signs
// with the same keys and a client's cached JWKS stays valid). With several keys the JWKS lists
// them all and the newest signs: a client that tries only the first key fails, as it would after a
// rotation at fal.
import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';

export const JWKS_PATH = '/.well-known/jwks.json';

/** DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed follows it. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
}

interface SigningKey {
  privateKey: KeyObject;
  jwk: Jwk;
}

function keyFromSeed(seed: Buffer): SigningKey {
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  const x = createPublicKey(privateKey).export({ format: 'jwk' }).x as string;
  const kid = createHash('sha256').update(x).digest('base64url').slice(0, 16);
  return { privateKey, jwk: { kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' } };
}

/** The `n`-th derived seed of a config seed. */
function derivedSeed(configSeed: number, n: number): Buffer {
  return createHash('sha256').update(`pixelmill-fal-emulator-webhook-key/${configSeed}/${n}`).digest();
}

export class WebhookSigner {
  readonly #keys: SigningKey[] = [];
  readonly #configSeed: number;

  /** `seeds`: base64url seeds from the config; none: one derived key (two when `rotated`). */
  constructor(configSeed: number, seeds: readonly string[], rotated: boolean) {
    this.#configSeed = configSeed;
    for (const seed of seeds) this.#keys.push(keyFromSeed(Buffer.from(seed, 'base64url')));
    if (this.#keys.length === 0) this.rotate();
    if (rotated && this.#keys.length < 2) this.rotate();
  }

  /** Adds a new key that signs from now on; the old ones stay in the JWKS. */
  rotate(): Jwk {
    const key = keyFromSeed(derivedSeed(this.#configSeed, this.#keys.length));
    this.#keys.push(key);
    return key.jwk;
  }

  get keyCount(): number {
    return this.#keys.length;
  }

  jwks(): { keys: Jwk[] } {
    return { keys: this.#keys.map((key) => key.jwk) };
  }

  /** The four X-Fal-Webhook-* headers for `body` sent now (`timestampSeconds`). */
  headers(requestId: string, userId: string, timestampSeconds: number, body: string): Record<string, string> {
    const timestamp = String(timestampSeconds);
    const digest = createHash('sha256').update(body, 'utf8').digest('hex');
    const message = Buffer.from(`${requestId}\n${userId}\n${timestamp}\n${digest}`, 'utf8');
    const signature = sign(null, message, this.#keys[this.#keys.length - 1]!.privateKey).toString('hex');
    return {
      'x-fal-webhook-request-id': requestId,
      'x-fal-webhook-user-id': userId,
      'x-fal-webhook-timestamp': timestamp,
      'x-fal-webhook-signature': signature,
    };
  }
}

/**
 * JSON as Python's json.dumps(sort_keys=True) writes it: ", " and ": " separators, keys sorted,
 * non-ASCII escaped as \uXXXX. fal's webhook bodies come from Python (a published sample body
 * begins `{"error": null, "gateway_request_id": ...`); a client that re-serializes the parsed body
 * instead of verifying the raw bytes fails, as it would against fal.
 */
export function pythonJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'string')
    return JSON.stringify(value).replace(
      /[\u0080-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${pythonJson(k)}: ${pythonJson(v)}`).join(', ')}}`;
}
