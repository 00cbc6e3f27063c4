// Terminal-state webhooks (spec part 6): the `{webhook}/callback` address, the signature, and a
// sender that delivers with the documented timeout and retry schedule (10 s, 30 s, 60 s, all
// scaled by time_scale) plus optional duplicate deliveries, which the real service is known to make.
//
// The sender is fire-and-forget for its caller: send() never throws and no receiver behaviour
// (hanging, resetting, answering garbage) can reject a promise nobody awaits. Outcomes are
// reported through `onAttempt`. Secrets never leave signWebhookBody: reports carry only statuses
// and error codes, never messages that could quote a header.
import { createHmac } from 'node:crypto';
import { Agent, request } from 'undici';
import { PixelmillError } from '../../common/errors.js';
import { systemClock, type Clock, type Timer } from '../core/clock.js';

/** Gaps before the 1st, 2nd and 3rd retry, in unscaled milliseconds; no retry after the third. */
const RETRY_DELAYS_MS = [10_000, 30_000, 60_000] as const;
const ATTEMPT_TIMEOUT_MS = 10_000;
/**
 * Default floor under the scaled attempt timeout. At time_scale 0.001 the timeout would be 10 ms,
 * shorter than a cold first request on a loaded machine: receivers that answered would see
 * spurious retries (measured: the very first delivery of a test run timed out). The floor keeps
 * the timeout about hung receivers, not about the sender's own warm-up.
 */
const DEFAULT_MIN_ATTEMPT_TIMEOUT_MS = 1_000;
/** A receiver's response body is read (so the connection can be reused) up to this size, then cut. */
const MAX_RESPONSE_BYTES = 64 * 1024;

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

type PostResult = { status: number } | { error: string; permanent: boolean };

export class WebhookSender {
  readonly #timeScale: number;
  readonly #attemptTimeoutMs: number;
  readonly #duplicateRate: number;
  readonly #random: () => number;
  readonly #clock: Clock;
  readonly #onAttempt: (attempt: WebhookAttempt) => void;
  // Owned so that close() can tear down keep-alive connections to receivers.
  readonly #agent = new Agent({ keepAliveTimeout: 4_000 });
  /** Attempts under way, with the controller that aborts each. */
  readonly #inFlight = new Map<Promise<void>, AbortController>();
  readonly #retries = new Set<{ timer?: Timer }>();
  #closing: Promise<void> | undefined;

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
    this.#timeScale = timeScale;
    this.#attemptTimeoutMs = Math.max(
      ATTEMPT_TIMEOUT_MS * timeScale,
      options.minAttemptTimeoutMs ?? DEFAULT_MIN_ATTEMPT_TIMEOUT_MS,
    );
    this.#duplicateRate = duplicateRate;
    this.#random = options.random;
    this.#clock = options.clock ?? systemClock;
    this.#onAttempt = options.onAttempt ?? (() => undefined);
  }

  /** Starts delivering in the background; ignored once close() was called. */
  send(delivery: WebhookDelivery): void {
    if (this.#closing) return;
    this.#start(delivery, 1, false);
  }

  /** Cancels pending retries, aborts attempts in flight and resolves when nothing is outstanding. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    for (const retry of this.#retries) retry.timer?.cancel();
    this.#retries.clear();
    for (const controller of this.#inFlight.values()) controller.abort();
    await Promise.all(this.#inFlight.keys());
    await this.#agent.destroy().catch(() => undefined);
  }

  #start(delivery: WebhookDelivery, attempt: number, duplicate: boolean): void {
    const controller = new AbortController();
    const run: Promise<void> = this.#attempt(delivery, attempt, duplicate, controller)
      .catch(() => undefined)
      .finally(() => this.#inFlight.delete(run));
    this.#inFlight.set(run, controller);
  }

  async #attempt(
    delivery: WebhookDelivery,
    attempt: number,
    duplicate: boolean,
    controller: AbortController,
  ): Promise<void> {
    const result = await this.#post(delivery, controller);
    // An attempt aborted by close() has no outcome worth reporting, and must not schedule more.
    if (this.#closing) return;
    const outcome = classify(result);
    const detail = 'status' in result ? { status: result.status } : { error: result.error };
    this.#report({
      taskId: delivery.taskId,
      attempt,
      outcome,
      ...detail,
      ...(duplicate ? { duplicate } : {}),
    });
    if (duplicate) return;
    if (outcome === 'delivered') {
      if (this.#duplicateRate > 0 && this.#random() < this.#duplicateRate)
        this.#start(delivery, attempt + 1, true);
    } else if (outcome === 'retryable_failure') {
      const delay = RETRY_DELAYS_MS[attempt - 1];
      if (delay === undefined) this.#report({ taskId: delivery.taskId, attempt, outcome: 'gave_up' });
      else this.#retryAfter(delay * this.#timeScale, () => this.#start(delivery, attempt + 1, false));
    }
  }

  #retryAfter(ms: number, fn: () => void): void {
    // An object rather than the Timer itself, because a clock may fire before setTimeout returns.
    const retry: { timer?: Timer } = {};
    this.#retries.add(retry);
    retry.timer = this.#clock.setTimeout(() => {
      this.#retries.delete(retry);
      if (!this.#closing) fn();
    }, ms);
  }

  async #post(delivery: WebhookDelivery, controller: AbortController): Promise<PostResult> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (delivery.secret !== '')
      headers['x-webhook-signature'] = signWebhookBody(delivery.body, delivery.secret);
    let timedOut = false;
    const timeout = this.#clock.setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#attemptTimeoutMs);
    try {
      const response = await request(delivery.callbackUrl, {
        dispatcher: this.#agent,
        method: 'POST',
        headers,
        body: delivery.body,
        signal: controller.signal,
      });
      // The status alone decides the outcome; a body that hangs or errors does not change it.
      await response.body.dump({ limit: MAX_RESPONSE_BYTES }).catch(() => undefined);
      return { status: response.statusCode };
    } catch (error) {
      if (timedOut) return { error: 'timeout', permanent: false };
      const code = errorCode(error);
      // A URL undici refuses (bad protocol, malformed) will not get better on retry.
      return { error: code, permanent: code === 'UND_ERR_INVALID_ARG' };
    } finally {
      timeout.cancel();
    }
  }

  #report(attempt: WebhookAttempt): void {
    try {
      this.#onAttempt(attempt);
    } catch {
      // A failing observer must not break deliveries or crash the emulator.
    }
  }
}

/**
 * 2xx delivered; 429, 5xx, timeouts and network errors retryable; any other status rejected.
 * 3xx counts as rejected: the spec lists no redirect handling, and following a redirect would
 * post a signed body to an address the caller never registered.
 */
function classify(result: PostResult): WebhookAttempt['outcome'] {
  if ('error' in result) return result.permanent ? 'rejected' : 'retryable_failure';
  const { status } = result;
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 429 || status >= 500) return 'retryable_failure';
  return 'rejected';
}

function errorCode(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? code : error.name;
  }
  return 'unknown_error';
}
