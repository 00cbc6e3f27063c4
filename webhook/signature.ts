// The X-Webhook-Signature check (spec part 6): hex HMAC-SHA256 of the raw body, keyed with the
// account's webhook secret, compared in constant time. The secret stays inside this module's calls.
import { createHmac, timingSafeEqual } from 'node:crypto';

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/** Whether `signature` (the header as received, possibly absent) signs `body` with `secret`. */
export function isValidSignature(body: Buffer, signature: string | undefined, secret: string): boolean {
  // The length and alphabet are public knowledge; only the digest itself is compared in constant time.
  if (signature === undefined || !HEX_SHA256.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}
