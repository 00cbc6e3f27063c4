// Wire shapes of BFL's FLUX API as the client and the webhook verifier read them (BFL's OpenAPI
// document: AsyncResponse, AsyncWebhookResponse, ResultResponse). Lenient where BFL is known to
// drift or to be undocumented: unknown fields are kept, statuses outside the documented set are
// carried as strings, and `result`, `details` and `error` are read only for what pixelmill needs.
import { z } from 'zod';

/** get_result's statuses (OpenAPI StatusResponse). */
export const BFL_STATUS = {
  ready: 'Ready',
  pending: 'Pending',
  error: 'Error',
  requestModerated: 'Request Moderated',
  contentModerated: 'Content Moderated',
  notFound: 'Task not found',
} as const;

/**
 * A submit's answer: `{id, polling_url, cost, input_mp, output_mp}` (AsyncResponse), or, for a
 * request with a `webhook_url`, `{id, status, webhook_url, cost, ...}` (AsyncWebhookResponse,
 * which the reference lists without a polling_url). `cost` is in credits (1 credit = $0.01).
 */
export const SubmitAnswerSchema = z.looseObject({
  id: z.string().min(1),
  polling_url: z.string().min(1).nullish(),
  cost: z.number().nonnegative().nullish(),
  status: z.string().nullish(),
});
export type SubmitAnswer = z.infer<typeof SubmitAnswerSchema>;

/**
 * get_result's answer: `{id, status, result, progress, details, preview}`. `result` is declared
 * as "any" and holds `{sample, prompt, seed, ...}` once Ready; `sample` is a signed URL.
 */
export const ResultResponseSchema = z.looseObject({
  id: z.string().nullish(),
  status: z.string().min(1),
  result: z.unknown().optional(),
  details: z.unknown().optional(),
  error: z.unknown().optional(),
  message: z.unknown().optional(),
  cost: z.unknown().optional(),
});
export type ResultResponse = z.infer<typeof ResultResponseSchema>;

/**
 * A webhook's body. BFL's reference documents `webhook_url` and `webhook_secret` but not the
 * body; its published integration notes give get_result's object plus a `timestamp` (failures as
 * `{id, status: "Error", error, message, timestamp}`), and a smaller notice is seen in the wild:
 * `{task_id, status: "SUCCESS"|"FAILED", result?, error?}`. Both are read.
 */
export const WebhookPayloadSchema = z
  .looseObject({
    id: z.string().min(1).optional(),
    task_id: z.string().min(1).optional(),
    status: z.string().min(1),
    result: z.unknown().optional(),
    details: z.unknown().optional(),
    error: z.unknown().optional(),
    message: z.unknown().optional(),
    timestamp: z.union([z.string(), z.number()]).optional(),
  })
  .refine((body) => body.id !== undefined || body.task_id !== undefined, { message: 'no task id' });
export type WebhookPayload = z.infer<typeof WebhookPayloadSchema>;

/** `result.sample` when `result` is an object that holds a string there. */
export function sampleOf(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const sample = (result as Record<string, unknown>).sample;
  return typeof sample === 'string' && sample !== '' ? sample : undefined;
}
