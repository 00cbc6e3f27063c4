// Wire schemas of Replicate's predictions API as this client reads them (the HTTP API's OpenAPI
// description: predictions.create/get/list/cancel, models.predictions.create,
// webhooks.default.secret.get; read 2026-11-26).
//
// Lenient where the service drifts: unknown fields are kept, a status outside the documented six is
// carried as a string, `output` is any JSON (image models give a URL or a list of URLs), and the
// fields a list entry may leave out (`output`, `logs`, `urls`) are optional.
import { z } from 'zod';

export const PREDICTION_STATUSES = [
  'starting',
  'processing',
  'succeeded',
  'failed',
  'canceled',
  'aborted',
] as const;

/** Statuses after which a prediction no longer changes. */
export const TERMINAL_STATUSES: readonly string[] = ['succeeded', 'failed', 'canceled', 'aborted'];

/** A prediction: the answer of create, get and cancel, a list entry, and a webhook's body. */
export const PredictionSchema = z.looseObject({
  id: z.string().min(1),
  status: z.string().min(1),
  model: z.string().optional(),
  version: z.string().optional(),
  /** Absent from some list entries; null before the end, on failure, and once removed. */
  output: z.unknown().optional(),
  error: z.string().nullable().optional(),
  created_at: z.string().min(1),
  started_at: z.string().nullable().optional(),
  completed_at: z.string().nullable().optional(),
  /** True once the input, output and files are deleted (an hour after an API prediction ends). */
  data_removed: z.boolean().optional(),
  /** When Cancel-After ends it (ISO), if it was sent. */
  deadline: z.string().nullable().optional(),
  urls: z.looseObject({ get: z.string().optional(), cancel: z.string().optional() }).optional(),
});
export type Prediction = z.infer<typeof PredictionSchema>;

/** GET /v1/predictions: 100 a page, newest first; `next` is the URL of the older page. */
export const PredictionPageSchema = z.looseObject({
  next: z.string().nullable().optional(),
  previous: z.string().nullable().optional(),
  results: z.array(PredictionSchema),
});
export type PredictionPage = z.infer<typeof PredictionPageSchema>;

/** GET /v1/webhooks/default/secret. */
export const WebhookSecretSchema = z.looseObject({ key: z.string().min(1) });
