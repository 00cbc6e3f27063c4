// Reading a webhook's body once its sender is verified, the same for every provider: UTF-8 JSON
// that the provider's schema accepts, or the 400 verdict saying which of the two it is not.
import type { z } from 'zod';
import type { WebhookVerdict } from './types.js';

export type WebhookRefusal = Extract<WebhookVerdict, { ok: false }>;

/** The body as `schema` reads it, or a 400: "the body is not JSON", "the body is not <what>". */
export function readWebhookBody<S extends z.ZodType>(
  body: Buffer,
  schema: S,
  what: string,
): { ok: true; data: z.output<S> } | WebhookRefusal {
  let parsed;
  try {
    parsed = schema.safeParse(JSON.parse(body.toString('utf8')));
  } catch {
    return { ok: false, status: 400, reason: 'the body is not JSON' };
  }
  if (!parsed.success) return { ok: false, status: 400, reason: `the body is not ${what}` };
  return { ok: true, data: parsed.data };
}
