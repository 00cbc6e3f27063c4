// A failed task's `error` (spec 2.5) as the report's `{type, code, message}`: one reading for the
// task GET (activities/api-calls.ts) and the webhook body (webhook/signal.ts).
import type { ErrorSummary } from '../common/types.js';

/** The task's error, with stand-ins for missing fields. */
export function taskError(error: { type?: string; code?: string; message?: string }): ErrorSummary {
  return {
    type: error.type ?? 'unknown',
    code: error.code ?? 'unknown',
    message: error.message ?? 'the task failed without an error message',
  };
}
