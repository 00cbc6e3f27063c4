// What this worker has seen the API accept: the evidence that tells a submit the API refuses
// for its own sake (a size the service cannot build, answered 500 build_request_failed) from an
// outage. A worker serves one API account, so its accepted submits are that account's.
import { ApplicationFailure } from '@temporalio/activity';
import { isImageApiError, RateLimitError } from '../api/index.js';
import { activityContext } from './context.js';
import { toActivityFailure } from './failures.js';

/**
 * Tries of one submit before it is the item's failure, if the API accepted other submits since
 * its first try: with Temporal's 1 s, doubling, retry interval, about 15 s. While nothing is
 * accepted (the API is down), a submit is retried without limit: an outage delays a run.
 */
export const SUBMIT_TRIES_WHILE_OTHERS_ACCEPTED = 5;

export class AcceptedSubmits {
  #lastMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly now: () => number = Date.now) {}

  record(): void {
    this.#lastMs = this.now();
  }

  /** Whether a submit was accepted at or after `ms` (epoch milliseconds). */
  since(ms: number): boolean {
    return this.#lastMs >= ms;
  }
}

/**
 * The failure Temporal sees for a submit that failed with `error`: a non-retryable
 * `SubmitRefused` once it has been tried SUBMIT_TRIES_WHILE_OTHERS_ACCEPTED times while the API
 * accepted others; otherwise the API error as classified (a 429 or an outage keeps retrying).
 */
export function submitFailure(error: unknown, accepted: AcceptedSubmits): unknown {
  const info = activityContext()?.info;
  const poisoned =
    info !== undefined &&
    isImageApiError(error) &&
    error.retryable &&
    !(error instanceof RateLimitError) &&
    info.attempt >= SUBMIT_TRIES_WHILE_OTHERS_ACCEPTED &&
    accepted.since(info.scheduledTimestampMs);
  if (!poisoned) return toActivityFailure(error);
  const seconds = Math.round((Date.now() - info.scheduledTimestampMs) / 1000);
  const message = `${error.message} (refused ${info.attempt} times in ${seconds} s while the API accepted other submits)`;
  return ApplicationFailure.create({
    type: 'SubmitRefused',
    message,
    nonRetryable: true,
    details: [
      {
        type: 'SubmitRefused',
        code: error.apiCode ?? error.code,
        message,
        ...(error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {}),
        ...(error.apiType !== undefined ? { apiType: error.apiType } : {}),
      },
    ],
  });
}
