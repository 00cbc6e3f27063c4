// A prediction as pixelmill's task state and result: one reading for the GET, the list's entries
// and the webhook body, so each tells a shard the same thing.
//
// starting → pending, processing → processing, succeeded → completed with its output URLs (kept
// for an hour after completion: expiresAt), or expired once the output was removed; failed →
// failed (moderation → content_policy_violation, else generation_error), canceled → failed
// (cancelled), aborted (Cancel-After passed before it started) → failed (task_timeout). Any other
// status is carried as it came ("not finished yet" for the shard).
import type { ErrorSummary, TaskResult } from '../../common/types.js';
import type { TaskState } from '../types.js';
import type { Prediction } from './wire.js';

/** API predictions' output files are deleted an hour after they end (docs: data retention). */
export const RESULT_RETENTION_MS = 60 * 60_000;

/** pixelmill's statuses of a prediction that has ended: a lookup carries their result. */
const FINISHED: readonly string[] = ['completed', 'failed', 'expired'];

/**
 * What safety checkers and moderation say when they refuse an input or an output: the FLUX models'
 * "NSFW content detected" / "contained NSFW content", the proxied models' "flagged as sensitive".
 */
const MODERATION = /nsfw|flagged as sensitive|moderat|content policy/i;
/** Replicate's error codes: `E1001` (docs: reference/error-codes), `(E005)` in older messages. */
const ERROR_CODE = /\bE\d{3,4}\b/;

/** The prediction's word as a lookup's: its state, and its result when finished. */
export function taskStateOf(prediction: Prediction): TaskState {
  const result = taskResultOf(prediction);
  if (!FINISHED.includes(result.status)) return { status: result.status };
  // A list entry without `output` says it succeeded, but not where the images are: the collect
  // lane's GET fetches them.
  if (result.status === 'completed' && prediction.output === undefined) return { status: 'completed' };
  return { status: result.status, result };
}

export function taskResultOf(prediction: Prediction): TaskResult {
  switch (prediction.status) {
    case 'starting':
      return { status: 'pending' };
    case 'processing':
      return { status: 'processing' };
    case 'succeeded':
      return succeeded(prediction);
    case 'failed':
      return { status: 'failed', error: failure(prediction.error) };
    case 'canceled':
      // pixelmill cancels only at the run's deadline (the shard knows those); otherwise this is
      // Cancel-After, limits.task_timeout, passing while it ran: a timeout, which the retry policy
      // resubmits, as on every other provider.
      return {
        status: 'failed',
        error: {
          type: 'task_timeout',
          code: 'canceled',
          message:
            'the prediction was canceled: past its Cancel-After deadline (limits.task_timeout) while running, or asked to',
        },
      };
    case 'aborted':
      return {
        status: 'failed',
        error: {
          type: 'task_timeout',
          code: 'aborted',
          message: 'the prediction had not started when its Cancel-After deadline passed (not billed)',
        },
      };
    default:
      return { status: prediction.status };
  }
}

function succeeded(prediction: Prediction): TaskResult {
  const { output } = prediction;
  if (prediction.data_removed === true) return { status: 'expired' };
  if (output === undefined) return { status: 'completed' };
  if (output === null) return { status: 'expired' };
  const urls = (Array.isArray(output) ? output : [output]).filter(
    (url): url is string => typeof url === 'string' && url !== '',
  );
  if (urls.length === 0)
    return {
      status: 'failed',
      error: {
        type: 'generation_error',
        code: 'no_image_output',
        message: 'the prediction succeeded without an image URL in its output',
      },
    };
  const result: TaskResult = { status: 'completed', urls };
  const completedMs = timeOf(prediction.completed_at);
  if (completedMs !== undefined) result.expiresAt = completedMs + RESULT_RETENTION_MS;
  return result;
}

/** A failed prediction's error string as the report's `{type, code, message}`. */
export function failure(error: string | null | undefined): ErrorSummary {
  const message = error?.trim() || 'the prediction failed without an error message';
  return {
    type: MODERATION.test(message) ? 'content_policy_violation' : 'generation_error',
    code: ERROR_CODE.exec(message)?.[0] ?? 'failed',
    message,
  };
}

/** Milliseconds since the epoch of an ISO time the API gave, or undefined when unreadable. */
export function timeOf(iso: string | null | undefined): number | undefined {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(ms) ? undefined : ms;
}
