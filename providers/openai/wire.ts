// OpenAI's wire shapes that pixelmill reads, as zod schemas (developers.openai.com API reference:
// files, batches, images; read 2026-11-27). Unknown fields are dropped; only what is used is
// required, so that an answer with more fields (or a newer model's) still parses.
import { z } from 'zod';

/** A Batch's states: `validating` -> `in_progress` -> `finalizing` -> `completed`, or one of the ends. */
export const BATCH_STATUS = {
  validating: 'validating',
  failed: 'failed',
  inProgress: 'in_progress',
  finalizing: 'finalizing',
  completed: 'completed',
  expired: 'expired',
  cancelling: 'cancelling',
  cancelled: 'cancelled',
} as const;

/** The states after which a batch changes no more. */
export const TERMINAL_BATCH_STATES: ReadonlySet<string> = new Set([
  BATCH_STATUS.completed,
  BATCH_STATUS.failed,
  BATCH_STATUS.expired,
  BATCH_STATUS.cancelled,
]);

export const FileObjectSchema = z.object({
  id: z.string().min(1),
  bytes: z.number().optional(),
  filename: z.string().optional(),
  purpose: z.string().optional(),
});

const BatchErrorSchema = z.object({
  code: z.string().nullish(),
  message: z.string().nullish(),
  line: z.number().nullish(),
  param: z.string().nullish(),
});

export const BatchSchema = z.object({
  id: z.string().min(1),
  status: z.string(),
  endpoint: z.string().optional(),
  input_file_id: z.string().nullish(),
  output_file_id: z.string().nullish(),
  error_file_id: z.string().nullish(),
  created_at: z.number().optional(),
  request_counts: z.object({ total: z.number(), completed: z.number(), failed: z.number() }).nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  errors: z.object({ data: z.array(BatchErrorSchema).nullish() }).nullish(),
});
export type Batch = z.output<typeof BatchSchema>;

export const BatchListSchema = z.object({
  data: z.array(BatchSchema),
  has_more: z.boolean().optional(),
  last_id: z.string().nullish(),
});

export const UsageSchema = z.object({
  input_tokens: z.number().optional(),
  output_tokens: z.number().optional(),
  input_tokens_details: z
    .object({ text_tokens: z.number().optional(), image_tokens: z.number().optional() })
    .nullish(),
});
export type Usage = z.output<typeof UsageSchema>;

/** `POST /v1/images/generations`' answer: GPT image models give each image as base64. */
export const ImagesResponseSchema = z.object({
  created: z.number().optional(),
  data: z.array(z.object({ b64_json: z.string().nullish() })).nullish(),
  output_format: z.string().optional(),
  usage: UsageSchema.nullish(),
});
export type ImagesResponse = z.output<typeof ImagesResponseSchema>;

/** OpenAI's error envelope (an error answer's body, or a failed request's in a batch). */
export const ErrorBodySchema = z.object({
  error: z.object({
    message: z.string().nullish(),
    type: z.string().nullish(),
    code: z.string().nullish(),
    param: z.string().nullish(),
  }),
});

/** One line of a batch's output or error file. */
export const ResultLineSchema = z.object({
  id: z.string().nullish(),
  custom_id: z.string(),
  response: z
    .object({ status_code: z.number(), request_id: z.string().nullish(), body: z.unknown() })
    .nullish(),
  error: z.object({ code: z.string().nullish(), message: z.string().nullish() }).nullish(),
});
export type ResultLine = z.output<typeof ResultLineSchema>;
