// What the emulator POSTs to a task's `webhook_url` when the task ends, and how it signs it.
//
// BFL's API reference documents `webhook_url` and `webhook_secret` ("for webhook signature
// verification") but not the payload or the signature. The defaults follow BFL's own published
// integration notes (github.com/black-forest-labs/skills, bfl-api/references/webhook-integration.md):
// the get_result object plus a `timestamp`, signed `X-BFL-Signature: sha256=<hex HMAC-SHA256 of
// the raw body keyed by webhook_secret>`. The other readings seen in the wild are knobs: a
// smaller notice `{task_id, status: SUCCESS|FAILED, result?, error?}`, the secret itself echoed
// in `X-Webhook-Secret`, or no signature at all.
import { createHmac } from 'node:crypto';
import type { BflConfig } from './config.js';
import type { ResultView } from './views.js';

export const SIGNATURE_HEADER = 'x-bfl-signature';
export const SECRET_HEADER = 'x-webhook-secret';

/** The raw JSON body for a task's terminal view, sent and signed byte for byte. */
export function webhookBody(view: ResultView, payload: BflConfig['webhooks']['payload'], at: number): string {
  const timestamp = new Date(at).toISOString();
  if (payload === 'get_result') return JSON.stringify({ ...view, timestamp });
  const succeeded = view.status === 'Ready';
  const notice: Record<string, unknown> = { task_id: view.id, status: succeeded ? 'SUCCESS' : 'FAILED' };
  if (succeeded) notice.result = view.result;
  else notice.error = view.status;
  notice.timestamp = timestamp;
  return JSON.stringify(notice);
}

/** Hex HMAC-SHA256 of the raw body, keyed by the request's webhook_secret. */
export function signBody(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

/** The headers that authenticate a delivery; none without a webhook_secret. */
export function signatureHeaders(
  body: string,
  secret: string | null,
  scheme: BflConfig['webhooks']['signature'],
): Record<string, string> {
  if (secret === null || secret === '' || scheme === 'none') return {};
  if (scheme === 'secret_header') return { [SECRET_HEADER]: secret };
  return { [SIGNATURE_HEADER]: `sha256=${signBody(body, secret)}` };
}
