// BFL's webhooks: pixelmill gives BFL the secret at submit (`webhook_secret`), and BFL
// authenticates the delivery with it. BFL's API reference says only "secret for webhook signature
// verification"; two readings are published, and a delivery is taken under either:
// - `X-BFL-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed by the secret>` (BFL's
//   integration notes, github.com/black-forest-labs/skills), checked in constant time;
// - the secret itself in `X-Webhook-Secret` (BFL's Kontext guide), compared in constant time. It
//   authenticates the sender but not the body.
// A signature header present decides (a wrong one is refused even with the secret beside it).
// Several secrets are tried (the current one, then `previousSecrets`), so that rotating the
// secret does not refuse the tasks submitted before. A body `timestamp` more than 5 minutes from
// the receiver's clock is refused (BFL documents no tolerance); BFL sends no delivery id, so a
// replay within those minutes is accepted, and harmless: the receiver signals a task once.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingWebhook, WebhookKeys, WebhookVerdict, WebhookVerifier } from '../types.js';
import { readWebhookBody } from '../webhook-body.js';
import { taskStateOf } from './task-result.js';
import { WebhookPayloadSchema } from './wire.js';

export const SIGNATURE_HEADER = 'x-bfl-signature';
export const SECRET_HEADER = 'x-webhook-secret';
/** How far a body's timestamp may be from the receiver's clock. */
export const TIMESTAMP_TOLERANCE_MS = 5 * 60_000;

const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;

/** The keys of BFL's verifier: the secret given at submit, and earlier ones still in flight. */
export interface BflWebhookKeys extends WebhookKeys {
  previousSecrets?: readonly string[];
}

/** Whether `header` (as received, possibly absent) is `sha256=<hex>` of `body` under one of `secrets`. */
export function isValidSignature(
  body: Buffer,
  header: string | undefined,
  secrets: readonly string[],
): boolean {
  const match = header === undefined ? null : SIGNATURE.exec(header.trim());
  if (match === null) return false;
  const given = Buffer.from(match[1]!, 'hex');
  // Every secret is tried, so the time taken does not say which one matched.
  let valid = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(body).digest();
    if (timingSafeEqual(expected, given)) valid = true;
  }
  return valid;
}

/** Whether `header` is one of `secrets`, compared as digests so that lengths do not leak. */
export function isEchoedSecret(header: string | undefined, secrets: readonly string[]): boolean {
  if (header === undefined || header === '') return false;
  const given = createHash('sha256').update(header).digest();
  let valid = false;
  for (const secret of secrets) {
    if (timingSafeEqual(createHash('sha256').update(secret).digest(), given)) valid = true;
  }
  return valid;
}

/** A body timestamp in ms: ISO 8601, or Unix seconds (or ms) as a number. NaN when unreadable. */
export function timestampMs(value: string | number): number {
  if (typeof value === 'number') return value < 1e12 ? value * 1000 : value;
  return /^\d+(\.\d+)?$/.test(value.trim()) ? timestampMs(Number(value)) : Date.parse(value);
}

export function bflWebhookVerifier(keys: BflWebhookKeys): WebhookVerifier {
  const secrets = [keys.secret, ...(keys.previousSecrets ?? [])].filter(
    (secret): secret is string => typeof secret === 'string' && secret !== '',
  );
  return {
    async verify({ body, headers, nowMs }: IncomingWebhook): Promise<WebhookVerdict> {
      if (secrets.length === 0)
        return { ok: false, status: 401, reason: 'no BFL webhook secret is configured' };
      const signature = headers[SIGNATURE_HEADER];
      if (signature !== undefined) {
        if (!isValidSignature(body, signature, secrets))
          return { ok: false, status: 401, reason: `wrong ${SIGNATURE_HEADER}` };
      } else if (!isEchoedSecret(headers[SECRET_HEADER], secrets)) {
        return {
          ok: false,
          status: 401,
          reason: `missing or wrong ${SIGNATURE_HEADER} (or ${SECRET_HEADER})`,
        };
      }
      const parsed = readWebhookBody(body, WebhookPayloadSchema, 'a BFL task notice');
      if (!parsed.ok) return parsed;
      const payload = parsed.data;
      let sentAt = nowMs;
      if (payload.timestamp !== undefined) {
        sentAt = timestampMs(payload.timestamp);
        if (Number.isNaN(sentAt)) return { ok: false, status: 400, reason: 'the timestamp is not a time' };
        if (Math.abs(nowMs - sentAt) > TIMESTAMP_TOLERANCE_MS)
          return { ok: false, status: 401, reason: 'the timestamp is more than 5 minutes off' };
      }
      const taskId = (payload.id ?? payload.task_id)!;
      // The sample URL's 10 minutes run from when BFL sent it, not from when it arrived.
      const state = taskStateOf(payload, Math.min(sentAt, nowMs));
      return {
        ok: true,
        notice: { taskId, status: state.status, ...(state.result ? { result: state.result } : {}) },
      };
    },
  };
}
