// Wire schemas of the asynchronous task API (spec part 2) as the client reads them.
//
// Parsing is deliberately lenient where the real service is known to drift: unknown fields are
// kept, and status strings outside the documented set are carried through as strings so that
// callers can report them ("treat any unknown non-terminal value as not finished") instead of
// failing the whole response.
import { z } from 'zod';

import { LANGUAGES, MAX_IMAGE_URLS, RESOLUTIONS } from '../../common/generation.js';

export type { Language, Resolution } from '../../common/generation.js';

export const TASK_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type KnownTaskStatus = (typeof TASK_STATUSES)[number];
export const TERMINAL_STATUSES: readonly string[] = ['completed', 'failed'];

export { MAX_BATCH_IDS } from '../../common/batch-lookup.js';

export function isTerminalStatus(status: string): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function isKnownTaskStatus(status: string): status is KnownTaskStatus {
  return (TASK_STATUSES as readonly string[]).includes(status);
}

/** 2.1: body of POST /v1/images/generations. */
export const GenerationRequestSchema = z.object({
  prompt: z.string(),
  model: z.string().optional(),
  size: z.string().optional(),
  resolution: z.enum(RESOLUTIONS).optional(),
  n: z.number().int().min(1).optional(),
  // The spec's limit on reference images is pixelmill's own (common/generation.ts).
  image_urls: z.array(z.url()).max(MAX_IMAGE_URLS).optional(),
  webhook: z.url().optional(),
  language: z.enum(LANGUAGES).optional(),
});
export type GenerationRequest = z.infer<typeof GenerationRequestSchema>;

/** 2.2: submit acknowledgement. */
export const SubmitAckSchema = z.looseObject({
  code: z.number().int(),
  data: z.array(z.looseObject({ status: z.string(), task_id: z.string().min(1) })),
});
export type SubmitAck = z.infer<typeof SubmitAckSchema>;

/** 2.4 */
export const TaskResultSchema = z.looseObject({
  url: z.array(z.string()),
  expires_at: z.number().int().optional(),
  image_ids: z.array(z.string()).optional(),
});
export type TaskResult = z.infer<typeof TaskResultSchema>;

/** 2.5 */
export const TaskErrorSchema = z.looseObject({
  message: z.string().optional(),
  type: z.string().optional(),
  param: z.string().optional(),
  code: z.string().optional(),
});
export type TaskError = z.infer<typeof TaskErrorSchema>;

/** 2.3: a task, as the data of GET /v1/tasks/{id} and as the webhook body. */
export const TaskSchema = z.looseObject({
  id: z.string().min(1),
  status: z.string().min(1),
  progress: z.string().optional(),
  created: z.number().int().optional(),
  estimated_time: z.number().int().optional(),
  completed: z.number().int().optional(),
  actual_time: z.number().int().optional(),
  credits_cost: z.number().int().optional(),
  result: TaskResultSchema.optional(),
  error: TaskErrorSchema.optional(),
});
export type Task = z.infer<typeof TaskSchema>;

export const TaskEnvelopeSchema = z.looseObject({ code: z.number().int(), data: TaskSchema });

/** 2.6 */
export const BatchItemSchema = z.looseObject({ id: z.string(), status: z.string().min(1) });
export type BatchItem = z.infer<typeof BatchItemSchema>;
export const BatchEnvelopeSchema = z.looseObject({ code: z.number().int(), data: z.array(BatchItemSchema) });
