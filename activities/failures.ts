// The one place where an API client error becomes the failure Temporal sees. The client has
// already classified it (api/classify.ts); this keeps that decision: `retryable` decides
// `nonRetryable`, Retry-After becomes `nextRetryDelay`, the class name becomes the failure type
// (what the workflow's `nonRetryableErrorTypes` and the 402 pause match on). No retry loop
// lives in the activities: Temporal owns retries. A 429 is the service working as designed: its
// failures are BENIGN, so a storm of them is not logged as hundreds of warnings. Storage errors
// (storage/errors.ts) are mapped here the same way.
import { ApplicationFailure } from '@temporalio/activity';
import { errorSummary, type FailureDetails } from '../common/errors.js';
import { isStorageError } from '../storage/errors.js';
import { RateLimitError, isImageApiError, toFailureDetails } from '../api/index.js';

/** Details attached to an API failure: its failure details, plus whether a submit may have landed. */
export interface ApiFailureDetails extends FailureDetails {
  /** True when the request may have been acted on although it failed (matters for submit). */
  outcomeUnknown: boolean;
}

/**
 * Converts an `ImageApiError` or a `StorageError` into an `ApplicationFailure`; anything else is
 * returned unchanged. `retryDelayMs`, when given, replaces the retry policy's next interval
 * unless the server said when to come back.
 * The message is the client's (one line, secrets already redacted); the cause is dropped so that
 * transport internals (headers, sockets) never reach workflow history.
 */
export function toActivityFailure(error: unknown, retryDelayMs?: number): unknown {
  if (isStorageError(error)) {
    // Its name as type, retryable only when it may help.
    return ApplicationFailure.create({
      type: error.name,
      message: error.message,
      nonRetryable: !error.retryable,
      details: [errorSummary(error)],
    });
  }
  if (!isImageApiError(error)) return error;
  const details: ApiFailureDetails = { ...toFailureDetails(error), outcomeUnknown: error.outcomeUnknown };
  return ApplicationFailure.create({
    type: error.name,
    message: error.message,
    nonRetryable: !error.retryable,
    ...((error.retryAfterMs ?? retryDelayMs) !== undefined
      ? { nextRetryDelay: error.retryAfterMs ?? retryDelayMs }
      : {}),
    ...(error instanceof RateLimitError ? { category: 'BENIGN' as const } : {}),
    details: [details],
  });
}
