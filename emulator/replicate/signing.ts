// Webhook signatures as Replicate sends them: Standard Webhooks (docs/topics/webhooks/verify-webhook,
// read 2026-11-26). Three headers: `webhook-id` (one per message, the same on every retry of it),
// `webhook-timestamp` (Unix seconds of the attempt) and `webhook-signature` (space-separated
// `v1,<base64>` entries), the HMAC-SHA256 of `${id}.${timestamp}.${body}` keyed by the base64-decoded
// part of the secret after `whsec_`. Secrets stay in this module: nothing it returns quotes one.
import { createHmac } from 'node:crypto';
import type { Random } from '../core/random.js';

/** The HMAC key of a `whsec_<base64>` secret: the bytes its base64 part decodes to. */
export function signingKey(secret: string): Buffer {
  return Buffer.from(secret.slice(secret.indexOf('_') + 1), 'base64');
}

/** The `webhook-signature` value for one message attempt. */
export function webhookSignature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const digest = createHmac('sha256', signingKey(secret))
    .update(`${id}.${timestampSeconds}.${body}`, 'utf8')
    .digest('base64');
  return `v1,${digest}`;
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': webhookSignature(secret, id, timestampSeconds, body),
  };
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A message id in the Standard Webhooks style (`msg_` and 27 base62 characters). */
export function newMessageId(random: Random): string {
  let id = 'msg_';
  for (let i = 0; i < 27; i++) id += BASE62[Math.floor(random() * 62)];
  return id;
}

/**
 * Whether `value` is an absolute http(s) URI as RFC 3986 writes one: ASCII only (a host such as
 * `https://Ï` is an IRI, not a URI, although WHATWG URL parsing would accept it), a host, no spaces.
 */
export function isWebhookUri(value: string, requireHttps: boolean): boolean {
  if (!/^[\x21-\x7e]+$/.test(value)) return false;
  if (!/^https?:\/\/[^/?#]+/i.test(value)) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hostname === '') return false;
  return requireHttps ? url.protocol === 'https:' : url.protocol === 'https:' || url.protocol === 'http:';
}
