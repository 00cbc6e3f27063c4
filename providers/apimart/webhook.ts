// The first API's terminal-state webhook (spec part 6): the body is the Task itself, signed with a
// hex HMAC-SHA256 of the raw body in X-Webhook-Signature, keyed with the account's webhook secret
// and compared in constant time. The secret stays inside this module's calls.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingWebhook, WebhookKeys, WebhookVerdict, WebhookVerifier } from '../types.js';
import { readWebhookBody } from '../webhook-body.js';
import { taskResultOf } from './task-result.js';
import { TaskSchema } from './wire.js';

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/** Whether `signature` (the header as received, possibly absent) signs `body` with `secret`. */
export function isValidSignature(body: Buffer, signature: string | undefined, secret: string): boolean {
  // The length and alphabet are public knowledge; only the digest itself is compared in constant time.
  if (signature === undefined || !HEX_SHA256.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

export function apimartWebhookVerifier(keys: WebhookKeys): WebhookVerifier {
  const secret = keys.secret ?? '';
  return {
    async verify({ body, headers }: IncomingWebhook): Promise<WebhookVerdict> {
      if (secret === '' || !isValidSignature(body, headers['x-webhook-signature'], secret))
        return { ok: false, status: 401, reason: 'missing or wrong X-Webhook-Signature' };
      const parsed = readWebhookBody(body, TaskSchema, 'a Task');
      if (!parsed.ok) return parsed;
      const result = taskResultOf(parsed.data);
      return { ok: true, notice: { taskId: parsed.data.id, status: result.status, result } };
    },
  };
}
