// What the fal emulator keeps with each simulated request (the core Job's `data`): journaled at
// submit, so everything here must be JSON and fixed then.
import type { ModerationMode } from './config.js';
import type { FluxInput, ValidationIssue } from './input.js';

/** An injected image fault: every image of the request is wrong in this way. */
export type ImageFault = 'blank' | 'corrupt' | 'wrong_size' | 'wrong_format';

export interface FalJobData {
  /** The model id submitted to, sub-path included (`fal-ai/flux/dev`). */
  model: string;
  /** `owner/app` (namespace first, if any): the prefix of its status, result and cancel URLs. */
  app: string;
  /** The validated input; null when validation failed. */
  input: FluxInput | null;
  /** The model's 422 detail when the input is invalid. */
  invalid: ValidationIssue[] | null;
  /** The runner failed with a retryable error and the queue could not (or was told not to) retry. */
  runnerUnavailable: boolean;
  /** Attempts the queue retried invisibly before the one that ran. */
  runnerRetries: number;
  /** The seed the model used: the input's, or one it drew. */
  seed: number;
  /** `request_id` of the last attempt (fal: equals request_id unless the request was retried). */
  gatewayRequestId: string;
  /** How long its image URLs live after it ends, emulated seconds. */
  cdnSeconds: number;
  imageFault: ImageFault | null;
  moderation: ModerationMode;
  /** The webhook carries `payload: null` and a `payload_error` (faults). */
  webhookPayloadError: boolean;
}
