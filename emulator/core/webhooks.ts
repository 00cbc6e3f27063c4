// Webhook delivery shared by the provider emulators: POST a body to a URL with a per-attempt
// timeout and a retry schedule (both scaled by time_scale), plus two faults: duplicate deliveries
// (a delivered body sent again) and lost ones (never sent at all). The signature headers come
// from a provider-supplied function called for every attempt, so a timestamp in them is fresh.
//
// Fire and forget: send() never throws, and no receiver behaviour (hanging, resetting, garbage)
// can reject a promise nobody awaits. Outcomes are counted through `onAttempt`. Redirects are not
// followed: a signed body must not reach an address the caller never registered.
import { Agent, request } from 'undici';
import { systemClock, type Clock, type Timer } from './clock.js';
import type { Random } from './random-streams.js';

export type WebhookOutcome =
  'delivered' | 'retryable_failure' | 'rejected' | 'gave_up' | 'lost' | 'duplicate_delivered';

export interface WebhookAttempt {
  jobId: string;
  /** 1-based; a duplicate counts as the attempt after the one it repeats. */
  attempt: number;
  outcome: WebhookOutcome;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  /** Why no status: `timeout`, or a network error code such as `ECONNREFUSED`. */
  error?: string;
  /** Set on every attempt of a deliberate second delivery, whatever its outcome. */
  duplicate?: true;
}

export interface WebhookMessage {
  url: string;
  jobId: string;
  /** The raw body, sent byte for byte as given (signatures are over these bytes). */
  body: string;
  /** Headers for one attempt (content type included by the dispatcher); called per attempt. */
  headers: (attempt: number) => Record<string, string>;
}

export interface WebhookDispatcherOptions {
  clock?: Clock;
  timeScale: number;
  /** Gaps before each retry in emulated seconds; the length is the number of retries. */
  retryDelaysSeconds: readonly number[];
  /** Per-attempt timeout in emulated seconds. */
  attemptTimeoutSeconds: number;
  /** Floor under the scaled timeout, in clock ms (a cold first request can take longer than 10 ms). */
  minAttemptTimeoutMs?: number;
  /** Which answers are retried: any failure (2xx delivers), or only 429, 5xx and network errors. */
  retryOn: 'any_failure' | 'server_errors';
  duplicateRate: number;
  lostRate: number;
  random: Random;
  onAttempt?: (attempt: WebhookAttempt) => void;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

type PostResult = { status: number } | { error: string; permanent: boolean };

export class WebhookDispatcher {
  readonly #options: WebhookDispatcherOptions;
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #agent = new Agent({ keepAliveTimeout: 4_000 });
  readonly #inFlight = new Map<Promise<void>, AbortController>();
  readonly #retries = new Set<{ timer?: Timer }>();
  #closing: Promise<void> | undefined;

  constructor(options: WebhookDispatcherOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#timeoutMs = Math.max(
      options.attemptTimeoutSeconds * 1000 * options.timeScale,
      options.minAttemptTimeoutMs ?? 1_000,
    );
  }

  /** Starts delivering in the background (or loses it, by the lost-webhook fault). */
  send(message: WebhookMessage): void {
    if (this.#closing) return;
    const { lostRate, random } = this.#options;
    if (lostRate > 0 && random() < lostRate) {
      this.#report({ jobId: message.jobId, attempt: 1, outcome: 'lost' });
      return;
    }
    this.#start(message, 1, false);
  }

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

  #start(message: WebhookMessage, attempt: number, duplicate: boolean): void {
    const controller = new AbortController();
    const run: Promise<void> = this.#attempt(message, attempt, duplicate, controller)
      .catch(() => undefined)
      .finally(() => this.#inFlight.delete(run));
    this.#inFlight.set(run, controller);
  }

  async #attempt(
    message: WebhookMessage,
    attempt: number,
    duplicate: boolean,
    controller: AbortController,
  ): Promise<void> {
    const result = await this.#post(message, attempt, controller);
    if (this.#closing) return;
    let outcome = this.#classify(result);
    if (duplicate && outcome === 'delivered') outcome = 'duplicate_delivered';
    const detail = 'status' in result ? { status: result.status } : { error: result.error };
    this.#report({ jobId: message.jobId, attempt, outcome, ...detail, ...(duplicate ? { duplicate } : {}) });
    if (duplicate) return;
    const { duplicateRate, random, retryDelaysSeconds, timeScale } = this.#options;
    if (outcome === 'delivered') {
      if (duplicateRate > 0 && random() < duplicateRate) this.#start(message, attempt + 1, true);
    } else if (outcome === 'retryable_failure') {
      const delay = retryDelaysSeconds[attempt - 1];
      if (delay === undefined) this.#report({ jobId: message.jobId, attempt, outcome: 'gave_up' });
      else this.#retryAfter(delay * 1000 * timeScale, () => this.#start(message, attempt + 1, false));
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

  async #post(message: WebhookMessage, attempt: number, controller: AbortController): Promise<PostResult> {
    let timedOut = false;
    const timeout = this.#clock.setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#timeoutMs);
    try {
      const response = await request(message.url, {
        dispatcher: this.#agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...message.headers(attempt) },
        body: message.body,
        signal: controller.signal,
      });
      await response.body.dump({ limit: MAX_RESPONSE_BYTES }).catch(() => undefined);
      return { status: response.statusCode };
    } catch (error) {
      if (timedOut) return { error: 'timeout', permanent: false };
      const code = errorCode(error);
      return { error: code, permanent: code === 'UND_ERR_INVALID_ARG' };
    } finally {
      timeout.cancel();
    }
  }

  #classify(result: PostResult): WebhookOutcome {
    if ('error' in result) return result.permanent ? 'rejected' : 'retryable_failure';
    const { status } = result;
    if (status >= 200 && status < 300) return 'delivered';
    if (this.#options.retryOn === 'any_failure' || status === 429 || status >= 500)
      return 'retryable_failure';
    return 'rejected';
  }

  #report(attempt: WebhookAttempt): void {
    try {
      this.#options.onAttempt?.(attempt);
    } catch {
      // A failing observer must not break deliveries.
    }
  }
}

function errorCode(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? code : error.name;
  }
  return 'unknown_error';
}

/**
 * One clock timer per job with a webhook, due at the job's end. A reschedule may move the end:
 * `rearm` replaces the timers of the jobs it moved, and a timer that finds its job not yet ended
 * arms itself again. Each job's webhook fires once; stuck jobs (no end) never fire.
 */
export class JobEndTimers<J extends { id: string; endsAt: number }> {
  readonly #timers = new Map<string, { timer?: Timer }>();
  readonly #fired = new Set<string>();
  #closed = false;

  constructor(
    private readonly clock: Clock,
    private readonly fire: (job: J) => void,
  ) {}

  watch(job: J): void {
    if (this.#closed || this.#fired.has(job.id)) return;
    this.#timers.get(job.id)?.timer?.cancel();
    const pending: { timer?: Timer } = {};
    this.#timers.set(job.id, pending);
    // No end yet (stuck, or queued behind stuck jobs): kept so that a reschedule can arm it.
    if (!Number.isFinite(job.endsAt)) return;
    pending.timer = this.clock.setTimeout(
      () => {
        if (this.#timers.get(job.id) !== pending) return;
        this.#timers.delete(job.id);
        if (job.endsAt > this.clock.now()) this.watch(job);
        else {
          this.#fired.add(job.id);
          this.fire(job);
        }
      },
      Math.max(0, job.endsAt - this.clock.now()),
    );
  }

  /** Re-arms the timers of jobs whose end moved; jobs never watched are ignored. */
  rearm(jobs: readonly J[]): void {
    for (const job of jobs) if (this.#timers.has(job.id)) this.watch(job);
  }

  close(): void {
    this.#closed = true;
    for (const pending of this.#timers.values()) pending.timer?.cancel();
    this.#timers.clear();
  }
}
