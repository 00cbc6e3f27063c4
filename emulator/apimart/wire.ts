// The emulator's own statement of the API's wire format: the values the server accepts and the
// shapes it answers with, written from the contract rather than shared with pixelmill's client, so
// that a client mistake about the format shows up as a disagreement instead of agreeing by
// construction. Request validation (routes/submit.ts, routes/tasks.ts) and the error envelope
// (errors.ts) build on these.

/** The error-text languages a caller may ask for (submit body or query parameter). */
export const LANGUAGES = ['en', 'zh', 'ko', 'ja'] as const;
export type Language = (typeof LANGUAGES)[number];

/** The quality tiers of `resolution`. */
export const RESOLUTIONS = ['1K', '2K', '4K'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

/** The only model, and the default of `model`. */
export const DEFAULT_MODEL = 'gpt-image-2';
export const MAX_IMAGE_URLS = 15;
/** `task_ids` of a batch lookup: at least 1, at most this many. */
export const MAX_BATCH_IDS = 500;

/** The states of a task, as data.status of a query and of a webhook body. */
export const TASK_STATES = ['pending', 'processing', 'completed', 'failed'] as const;
export type TaskState = (typeof TASK_STATES)[number];

/** What a batch lookup may say about one id besides its state; these are not task states. */
export type BatchOutcome = 'invalid_id' | 'expired' | 'not_found';

/** The fixed status of every item of a submit acknowledgement. */
export const SUBMITTED = 'submitted';

/** data[] of a submit acknowledgement, `{code: 200, data: [...]}`. */
export interface SubmitAckItem {
  status: typeof SUBMITTED;
  task_id: string;
}

/** result of a completed task. */
export interface TaskResult {
  url: string[];
  expires_at: number;
  image_ids: string[];
}

/** error of a failed task. */
export interface TaskError {
  message: string;
  type: string;
  param?: string;
  code: string;
}

/** The task object: data of GET /v1/tasks/{id}, and the whole body of a webhook. */
export interface Task {
  id: string;
  status: TaskState;
  progress?: string;
  created?: number;
  estimated_time?: number;
  /** Terminal states only, as is actual_time. */
  completed?: number;
  actual_time?: number;
  credits_cost?: number;
  result?: TaskResult;
  error?: TaskError;
}

/** One element of data of a batch lookup: id and status only, never a result. */
export interface BatchItem {
  id: string;
  status: TaskState | BatchOutcome;
}

/** The body of every request-level failure; `param` is an extra naming the offending field. */
export interface ErrorEnvelope {
  error: { message: string; type: string; code: string; param?: string };
}
