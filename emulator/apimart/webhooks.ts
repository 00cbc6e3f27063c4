// Terminal-state webhooks (spec part 6): the `{webhook}/callback` address, the signature, and a
// sender that delivers with the documented timeout and retry schedule (10 s, 30 s, 60 s, all
// scaled by time_scale) plus optional duplicate deliveries, which the real service is known to make.
//
// The delivery itself (timeouts, retries, duplicates, closing) is core's WebhookDispatcher; this
// module gives it the spec's schedule, retries only 429, 5xx and network errors, signs each attempt
// and reports attempts by task. Fire-and-forget for its caller: send() never throws. Secrets never
// leave signWebhookBody: reports carry only statuses and error codes, never messages that could
// quote a header.
import { createHmac } from 'node:crypto';
import { PixelmillError } from '../../common/errors.js';
import type { Clock } from '../core/clock.js';
import { WebhookDispatcher, type WebhookAttempt as JobWebhookAttempt } from '../core/webhooks.js';

/** Gaps before the 1st, 2nd and 3rd retry, in unscaled seconds; no retry after the third. */
const RETRY_DELAYS_SECONDS = [10, 30, 60] as const;
const ATTEMPT_TIMEOUT_SECONDS = 10;
/**
 * Default floor under the scaled attempt timeout. At time_scale 0.001 the timeout would be 10 ms,
 * shorter than a cold first request on a loaded machine: receivers that answered would see
 * spurious retries (measured: the very first delivery of a test run timed out). The floor keeps
 * the timeout about hung receivers, not about the sender's own warm-up.
 */
const DEFAULT_MIN_ATTEMPT_TIMEOUT_MS = 1_000;

export class WebhookConfigError extends PixelmillError {
  override name = 'WebhookConfigError';
  readonly code: 'webhook_url_invalid' | 'webhook_option_invalid';
  readonly retryable = false;

  constructor(code: WebhookConfigError['code'], message: string) {
    super(message);
    this.code = code;
  }
}

/** `{webhook}/callback`: `/callback` appended to the path (one slash), query kept, fragment dropped. */
export function callbackUrlFor(webhook: string): string {
  let url: URL;
  try {
    url = new URL(webhook);
  } catch {
    throw new WebhookConfigError('webhook_url_invalid', `webhook "${webhook}" is not a valid URL`);
  }
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/callback`;
  url.hash = '';
  return url.toString();
}

/** Hex HMAC-SHA256 of the raw body (the X-Webhook-Signature header). */
export function signWebhookBody(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

export type WebhookAttempt = {
  taskId: string;
  /** 1-based; a duplicate counts as the attempt after the one it repeats. */
  attempt: number;
  /** `gave_up` is an extra report after the last attempt's `retryable_failure`, same attempt number. */
  outcome: 'delivered' | 'retryable_failure' | 'rejected' | 'gave_up';
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  /** Why no status: `timeout`, or a network error code such as `ECONNREFUSED` or `UND_ERR_SOCKET`. */
  error?: string;
  /** Set on the deliberate second delivery of a successful one (faults.webhook_duplicate_rate). */
  duplicate?: boolean;
};

export interface WebhookDelivery {
  callbackUrl: string;
  taskId: string;
  /** The raw JSON body; it is sent and signed byte for byte as given. */
  body: string;
  /** The account's webhook_secret; empty means "send no signature header". */
  secret: string;
}

export interface WebhookSenderOptions {
  timeScale: number;
  /** Share in [0, 1] of successful deliveries that are sent a second time. */
  duplicateRate: number;
  random: () => number;
  clock?: Clock;
  onAttempt?: (attempt: WebhookAttempt) => void;
  /** Lower bound of the per-attempt timeout (10 s x timeScale), in clock milliseconds; default 1000. */
  minAttemptTimeoutMs?: number;
}

export class WebhookSender {
  readonly #dispatcher: WebhookDispatcher;

  constructor(options: WebhookSenderOptions) {
    const { timeScale, duplicateRate } = options;
    if (!(Number.isFinite(timeScale) && timeScale > 0)) {
      throw new WebhookConfigError(
        'webhook_option_invalid',
        `timeScale must be a positive number, got ${timeScale}`,
      );
    }
    if (!(duplicateRate >= 0 && duplicateRate <= 1)) {
      throw new WebhookConfigError(
        'webhook_option_invalid',
        `duplicateRate must be between 0 and 1, got ${duplicateRate}`,
      );
    }
    const { onAttempt } = options;
    this.#dispatcher = new WebhookDispatcher({
      clock: options.clock,
      timeScale,
      retryDelaysSeconds: RETRY_DELAYS_SECONDS,
      attemptTimeoutSeconds: ATTEMPT_TIMEOUT_SECONDS,
      minAttemptTimeoutMs: options.minAttemptTimeoutMs ?? DEFAULT_MIN_ATTEMPT_TIMEOUT_MS,
      // 3xx is rejected too: the spec lists no redirect handling, and following a redirect would
      // post a signed body to an address the caller never registered.
      retryOn: 'server_errors',
      duplicateRate,
      lostRate: 0,
      random: options.random,
      onAttempt: (attempt) => onAttempt?.(taskAttempt(attempt)),
    });
  }

  /** Starts delivering in the background; ignored once close() was called. */
  send(delivery: WebhookDelivery): void {
    const { body, secret } = delivery;
    this.#dispatcher.send({
      url: delivery.callbackUrl,
      jobId: delivery.taskId,
      body,
      // An empty secret means "send no signature header".
      headers: (): Record<string, string> =>
        secret === '' ? {} : { 'x-webhook-signature': signWebhookBody(body, secret) },
    });
  }

  /** Cancels pending retries, aborts attempts in flight and resolves when nothing is outstanding. */
  close(): Promise<void> {
    return this.#dispatcher.close();
  }
}

/**
 * Core's report in this API's words: by task; every attempt of a duplicate delivery carries
 * `duplicate`, and a delivered one is `delivered`. Core's `lost` never comes (lostRate is 0).
 */
function taskAttempt({ jobId, attempt, outcome, duplicate, ...detail }: JobWebhookAttempt): WebhookAttempt {
  const named = outcome === 'duplicate_delivered' ? 'delivered' : (outcome as WebhookAttempt['outcome']);
  return { taskId: jobId, attempt, outcome: named, ...detail, ...(duplicate ? { duplicate } : {}) };
}
