// What this worker has seen the API do: the evidence that tells a submit the API refuses for its
// own sake (a size the service cannot build, answered 500 build_request_failed) from an outage.
// A worker serves one API account, so what it sees is that account's.
import { ApplicationFailure } from '@temporalio/activity';
import { isImageApiError, RateLimitError } from '../api/index.js';
import { activityContext } from './context.js';
import { toActivityFailure } from './failures.js';

/**
 * Tries of one submit before it is the item's failure, if the API accepted other submits since
 * its first try and no other call failed since: with Temporal's 1 s, doubling, retry interval,
 * about 15 s. Otherwise (an outage) a submit is retried without limit: an outage delays a run.
 */
export const SUBMIT_TRIES_WHILE_OTHERS_ACCEPTED = 5;

/** A failure that may heal by itself (5xx, network, a garbled answer); not a 429, which is the limit working. */
function transient(error: unknown): boolean {
  return isImageApiError(error) && error.retryable && !(error instanceof RateLimitError);
}

export class ApiEvidence {
  #acceptedMs = Number.NEGATIVE_INFINITY;
  /** The last transient failure of any API call, and which activity it was. */
  #failure = { ms: Number.NEGATIVE_INFINITY, activityId: '' };

  constructor(private readonly now: () => number = Date.now) {}

  accepted(): void {
    this.#acceptedMs = this.now();
  }

  /** Notes `error` when it is transient: during an outage every call sees one. */
  failed(error: unknown): void {
    if (!transient(error)) return;
    this.#failure = { ms: this.now(), activityId: activityContext()?.info.activityId ?? '' };
  }

  /**
   * Whether the current submit, failing with `error`, is refused for its own sake: tried the
   * bound, a submit accepted since its first try, and no other call failing since that.
   */
  refusesOnlyThis(error: unknown): boolean {
    const info = activityContext()?.info;
    if (info === undefined || !transient(error) || info.attempt < SUBMIT_TRIES_WHILE_OTHERS_ACCEPTED)
      return false;
    const othersFailing =
      this.#failure.activityId !== info.activityId && this.#failure.ms >= this.#acceptedMs;
    return this.#acceptedMs >= info.scheduledTimestampMs && !othersFailing;
  }
}

/**
 * The failure Temporal sees for a submit that failed with `error`: a non-retryable
 * `SubmitRefused` when the evidence says only this submit is refused; otherwise the API error
 * as classified (a 429 or an outage keeps retrying).
 */
export function submitFailure(error: unknown, evidence: ApiEvidence): unknown {
  const refused = evidence.refusesOnlyThis(error);
  evidence.failed(error);
  const info = activityContext()?.info;
  if (!refused || !isImageApiError(error) || info === undefined) return toActivityFailure(error);
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
