// fal's queue API as the client reads it (docs.fal.ai/model-apis/model-endpoints/queue, the
// inference API reference, and fal-ai/fal-js's queue types): the submit answer and its URLs, the
// status answer, a model's output, the webhook body and the signing keys' JWKS.
//
// Lenient where fal drifts: unknown fields are kept, status strings outside the documented set
// are carried as strings, and `queue_position` and `logs` may be missing or null.
import { z } from 'zod';

/** Headers fal reads or writes (lower-case, as undici gives them). */
export const HEADERS = {
  /** A deadline to start, in seconds (queue wait and the queue's own retries included). */
  requestTimeout: 'x-fal-request-timeout',
  /** `user` on the 504 of a request that missed its X-Fal-Request-Timeout. */
  requestTimeoutType: 'x-fal-request-timeout-type',
  /** fal's id of the request an answer is about: present on answers fal's servers wrote. */
  requestId: 'x-fal-request-id',
  /** The `error_type` of a request error (request-errors page). */
  errorType: 'x-fal-error-type',
  webhookRequestId: 'x-fal-webhook-request-id',
  webhookUserId: 'x-fal-webhook-user-id',
  webhookTimestamp: 'x-fal-webhook-timestamp',
  webhookSignature: 'x-fal-webhook-signature',
} as const;

/** The query parameter that asks for a webhook at submit. */
export const WEBHOOK_QUERY = 'fal_webhook';

/** Answer of `POST {base}/{model_id}`: the request's id and the URLs to reach it again. */
export const SubmitAnswerSchema = z.looseObject({
  request_id: z.string().min(1),
  status_url: z.string().min(1),
  response_url: z.string().min(1),
  cancel_url: z.string().min(1),
  // fal's JavaScript client types the submit's answer as an IN_QUEUE status: its position, if given.
  queue_position: z.number().int().min(0).nullish(),
});
export type SubmitAnswer = z.infer<typeof SubmitAnswerSchema>;

/** The documented states; COMPLETED says finished, not succeeded (the result call tells). */
export const QUEUE_STATUSES = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'] as const;

/** Answer of `GET {status_url}`: 202 while queued or running, 200 once COMPLETED. */
export const StatusAnswerSchema = z.looseObject({
  status: z.string().min(1),
  queue_position: z.number().int().min(0).nullish(),
});
export type StatusAnswer = z.infer<typeof StatusAnswerSchema>;

const FileSchema = z.looseObject({
  url: z.string().min(1),
  content_type: z.string().nullish(),
  width: z.number().nullish(),
  height: z.number().nullish(),
});

/**
 * A model's output as the result call or a webhook's payload carries it: the FLUX models' `images`
 * (and `has_nsfw_concepts`, one flag an image, when the safety checker ran), or a single `image`
 * for models that make one. Anything else passes through for the reader to judge.
 */
export const ModelOutputSchema = z.looseObject({
  images: z.array(FileSchema).optional(),
  image: FileSchema.optional(),
  has_nsfw_concepts: z.array(z.boolean().nullable()).nullish(),
  seed: z.number().nullish(),
});
export type ModelOutput = z.infer<typeof ModelOutputSchema>;

/** Any JSON: the result call's body is the model's own (or a status body, asked too early). */
export const AnyJsonSchema = z.unknown();

/**
 * The webhook body (docs: webhooks). `payload` is the model's output (OK) or its error body
 * (ERROR, with `error` like "Invalid status code: 422"); null with `payload_error` when fal could
 * not serialize it, and then the result call has it.
 */
export const WebhookBodySchema = z.looseObject({
  request_id: z.string().min(1),
  gateway_request_id: z.string().nullish(),
  status: z.string().min(1),
  payload: z.unknown().optional(),
  error: z.string().nullish(),
  payload_error: z.string().nullish(),
});
export type WebhookBody = z.infer<typeof WebhookBodySchema>;

/** The signing keys: Ed25519 public keys as OKP JWKs (`x` base64url); other entries are skipped. */
export const JwksSchema = z.looseObject({
  keys: z.array(
    z.looseObject({ kty: z.string().optional(), crv: z.string().optional(), x: z.string().optional() }),
  ),
});
export type Jwks = z.infer<typeof JwksSchema>;
