// Replicate's webhooks, signed the Standard Webhooks way (docs: webhooks/verify-webhook): headers
// `webhook-id`, `webhook-timestamp` (Unix seconds of the attempt) and `webhook-signature`
// (space-separated `v1,<base64>` entries, several while a key rotates), each an HMAC-SHA256 of
// `${id}.${timestamp}.${body}` keyed by the base64 bytes after `whsec_`. The `standardwebhooks`
// package signs; this module checks the timestamp against the receiver's own clock (its `verify`
// reads Date.now(), which tests and the emulator's compressed clock cannot move) and compares
// every entry in constant time.
//
// The secret is `keys.secret` when it is a `whsec_` secret, else what `keys.fetchSecret()` gets
// (GET /v1/webhooks/default/secret), fetched once and again at most once a minute when a
// signature does not match (a rotated secret). It never appears in a reason or an error.
//
// Replays: a delivery whose timestamp is more than 5 minutes off is refused; within that window a
// repeat of a genuine delivery is accepted and harmless, because Replicate resends a message with
// the same webhook-id when an attempt failed (refusing seen ids would lose those retries) and the
// receiver de-duplicates by prediction id.
import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { errorMessage, PixelmillError } from '../../common/errors.js';
import type { IncomingWebhook, WebhookKeys, WebhookVerdict, WebhookVerifier } from '../types.js';
import { readWebhookBody } from '../webhook-body.js';
import { taskResultOf } from './task-result.js';
import { PredictionSchema } from './wire.js';

/** How far a webhook's timestamp may be from the receiver's clock (Standard Webhooks' default). */
export const TIMESTAMP_TOLERANCE_MS = 5 * 60_000;
/** A fetched secret is fetched again, on a signature that does not match, at most this often. */
export const SECRET_REFETCH_MS = 60_000;

const SECRET_PREFIX = 'whsec_';

/** Replicate's secret could not be fetched: the receiver answers 5xx and Replicate retries. */
export class ReplicateWebhookSecretError extends PixelmillError {
  override name = 'ReplicateWebhookSecretError';
  readonly code = 'replicate_webhook_secret_unavailable';
  readonly retryable = true;
}

type Signer = Webhook | 'invalid';

export function replicateWebhookVerifier(keys: WebhookKeys): WebhookVerifier {
  const secrets = new SecretSource(keys);
  return {
    async verify({ body, headers, nowMs }: IncomingWebhook): Promise<WebhookVerdict> {
      const id = headers['webhook-id'];
      const timestamp = headers['webhook-timestamp'];
      const signature = headers['webhook-signature'];
      if (!id || !timestamp || !signature)
        return refused(401, 'missing webhook-id, webhook-timestamp or webhook-signature');
      if (!/^\d{1,12}$/.test(timestamp)) return refused(401, 'webhook-timestamp is not Unix seconds');
      const signedAt = new Date(Number(timestamp) * 1000);
      if (Math.abs(nowMs - signedAt.getTime()) > TIMESTAMP_TOLERANCE_MS)
        return refused(401, 'webhook-timestamp is more than 5 minutes off the receiver clock');
      if (!secrets.configured) return refused(401, 'no Replicate webhook secret is configured');

      const signs = (signer: Signer) =>
        signer !== 'invalid' && matchesAny(signature, signer.sign(id, signedAt, body));
      let signer = await secrets.current(nowMs);
      if (!signs(signer) && secrets.mayRefresh(nowMs)) signer = await secrets.refresh(nowMs);
      if (signer === 'invalid') return refused(401, 'the Replicate webhook secret is not a whsec_ secret');
      if (!signs(signer)) return refused(401, 'wrong webhook-signature');

      const parsed = readWebhookBody(body, PredictionSchema, 'a prediction');
      if (!parsed.ok) return parsed;
      const result = taskResultOf(parsed.data);
      const finished = result.status !== 'pending' && result.status !== 'processing';
      return {
        ok: true,
        notice: { taskId: parsed.data.id, status: result.status, ...(finished ? { result } : {}) },
      };
    },
  };
}

function refused(status: 400 | 401, reason: string): WebhookVerdict {
  return { ok: false, status, reason };
}

/** Whether any `v1,` entry of the header is `expected` (`v1,<base64>`), compared in constant time. */
function matchesAny(header: string, expected: string): boolean {
  const want = Buffer.from(expected.slice(expected.indexOf(',') + 1));
  let match = false;
  for (const entry of header.split(' ')) {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || value === undefined) continue;
    const got = Buffer.from(value);
    // Lengths are public (a base64 SHA-256 is always 44 characters); only contents are secret.
    if (got.length === want.length && timingSafeEqual(got, want)) match = true;
  }
  return match;
}

/** The signing key: configured, or fetched from Replicate and kept. */
class SecretSource {
  readonly #fixed: Signer | undefined;
  readonly #fetch: (() => Promise<string>) | undefined;
  #fetched: Promise<Signer> | undefined;
  #fetchedAt = Number.NEGATIVE_INFINITY;

  constructor(keys: WebhookKeys) {
    if (keys.secret?.startsWith(SECRET_PREFIX)) this.#fixed = signerOf(keys.secret);
    else this.#fetch = keys.fetchSecret;
  }

  get configured(): boolean {
    return this.#fixed !== undefined || this.#fetch !== undefined;
  }

  current(nowMs: number): Promise<Signer> {
    if (this.#fixed !== undefined) return Promise.resolve(this.#fixed);
    return (this.#fetched ??= this.#load(nowMs));
  }

  mayRefresh(nowMs: number): boolean {
    return this.#fetch !== undefined && nowMs - this.#fetchedAt >= SECRET_REFETCH_MS;
  }

  refresh(nowMs: number): Promise<Signer> {
    return (this.#fetched = this.#load(nowMs));
  }

  async #load(nowMs: number): Promise<Signer> {
    this.#fetchedAt = nowMs;
    try {
      return signerOf(await this.#fetch!());
    } catch (error) {
      // Not kept: the next delivery (Replicate retries this one) asks again.
      this.#fetched = undefined;
      throw new ReplicateWebhookSecretError(
        `fetching Replicate's webhook secret failed: ${errorMessage(error)}`,
        { cause: error },
      );
    }
  }
}

function signerOf(secret: string): Signer {
  try {
    return new Webhook(secret);
  } catch {
    return 'invalid';
  }
}
