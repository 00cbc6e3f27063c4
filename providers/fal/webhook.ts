// fal's webhook (docs.fal.ai, webhooks: "Verifying your webhook"): X-Fal-Webhook-Request-Id,
// -User-Id, -Timestamp (Unix seconds) and -Signature (hex) headers; the signature is Ed25519 over
// `request_id \n user_id \n timestamp \n sha256_hex(raw body)`, valid under any key of fal's JWKS
// (jwks.ts: cached, fetched again for a rotated key). Timestamps more than 5 minutes off the
// receiver's clock are refused. A replay within those 5 minutes repeats a signed, true statement:
// harmless, as the receiver signals each task once (it de-duplicates by task id).
//
// The body: `status` OK with the model's output as `payload` (read as the result call is), or
// ERROR with the error body as `payload` and `error` "Invalid status code: N". When the payload
// is null (`payload_error`: fal could not serialize it) or an ERROR cannot be read whole (a 504
// may be the start timeout, told by a header only the result call has), the notice says the
// request finished and the collect lane fetches the result.
import { createHash, verify, type KeyObject } from 'node:crypto';
import type { TaskResult } from '../../common/types.js';
import type { IncomingWebhook, WebhookKeys, WebhookVerdict, WebhookVerifier } from '../types.js';
import { readWebhookBody } from '../webhook-body.js';
import { JwksCache, type JwksCacheOptions } from './jwks.js';
import { errorFields, failureOf, outputResult } from './outcome.js';
import { HEADERS, WebhookBodySchema, type WebhookBody } from './wire.js';

/** fal's documented JWKS, when the deployment names none. */
export const DOCUMENTED_JWKS_URL = 'https://rest.fal.ai/.well-known/jwks.json';
/** Where a deployment names another JWKS (the emulator's, a proxy's); docs/providers.md#fal. */
export const JWKS_URL_ENV = 'PIXELMILL_FAL_JWKS_URL';
export const TIMESTAMP_TOLERANCE_MS = 5 * 60_000;

const HEX_SIGNATURE = /^[0-9a-f]{128}$/i;
const ERROR_STATUS = /\b([1-5]\d\d)\b/;

/** The verifier's keys from the environment: the JWKS address when set (empty counts as unset). */
export function falWebhookKeysFromEnv(env: NodeJS.ProcessEnv): WebhookKeys {
  const jwksUrl = env[JWKS_URL_ENV];
  return jwksUrl ? { jwksUrl } : {};
}

export function falWebhookVerifier(
  keys: WebhookKeys,
  cacheOptions: Partial<JwksCacheOptions> = {},
): WebhookVerifier {
  const jwks = new JwksCache({ url: keys.jwksUrl ?? DOCUMENTED_JWKS_URL, ...cacheOptions });
  return {
    async verify({ body, headers, nowMs }: IncomingWebhook): Promise<WebhookVerdict> {
      const requestId = headers[HEADERS.webhookRequestId];
      const userId = headers[HEADERS.webhookUserId];
      const timestamp = headers[HEADERS.webhookTimestamp];
      const signature = headers[HEADERS.webhookSignature];
      if (!requestId || userId === undefined || !timestamp || !signature)
        return refused('missing X-Fal-Webhook-Request-Id, -User-Id, -Timestamp or -Signature');
      if (
        !/^\d{1,12}$/.test(timestamp) ||
        Math.abs(nowMs - Number(timestamp) * 1000) > TIMESTAMP_TOLERANCE_MS
      )
        return refused('X-Fal-Webhook-Timestamp is more than 5 minutes off');
      if (!HEX_SIGNATURE.test(signature))
        return refused('X-Fal-Webhook-Signature is not a hex Ed25519 signature');
      const digest = createHash('sha256').update(body).digest('hex');
      const message = Buffer.from(`${requestId}\n${userId}\n${timestamp}\n${digest}`, 'utf8');
      const signed = Buffer.from(signature, 'hex');
      const verifies = (candidates: KeyObject[]) =>
        candidates.some((key) => verify(null, message, key, signed));
      if (!verifies(await jwks.keys(nowMs))) {
        const fresh = await jwks.refetched(nowMs);
        if (fresh === undefined || !verifies(fresh))
          return refused("the signature verifies under none of fal's keys");
      }
      const parsed = readWebhookBody(body, WebhookBodySchema, 'a fal webhook');
      if (!parsed.ok) return parsed;
      const hook = parsed.data;
      if (requestId !== hook.request_id && requestId !== hook.gateway_request_id)
        return {
          ok: false,
          status: 400,
          reason: 'X-Fal-Webhook-Request-Id names another request than the body',
        };
      const result = webhookResult(hook, nowMs);
      return {
        ok: true,
        notice: {
          taskId: hook.request_id,
          status: result.status,
          ...(hook.status === 'OK' || hook.status === 'ERROR' ? { result } : {}),
        },
      };
    },
  };
}

function refused(reason: string): WebhookVerdict {
  return { ok: false, status: 401, reason };
}

/** What the webhook says of the request; `completed` without URLs when only the result call can tell. */
export function webhookResult(hook: WebhookBody, nowMs: number): TaskResult {
  const fetchIt: TaskResult = { status: 'completed' };
  if (hook.status === 'OK') {
    if (hook.payload === null || hook.payload === undefined) return fetchIt;
    const result = outputResult(hook.payload, nowMs);
    return result?.status === 'completed' || result?.status === 'failed' ? result : fetchIt;
  }
  if (hook.status === 'ERROR') {
    const status = Number(ERROR_STATUS.exec(hook.error ?? '')?.[1] ?? NaN);
    const fields = errorFields(hook.payload);
    if (Number.isNaN(status) || status === 504 || fields === undefined) return fetchIt;
    return { status: 'failed', error: failureOf(status, {}, fields) };
  }
  return { status: hook.status };
}
