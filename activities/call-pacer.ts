// The worker-side half of the global rate limit. Temporal's matching service dispatches API
// activities at the run's requests_per_second across all workers, but its token bucket lets a
// full second's worth through at once after a quiet spell, and hands a burst to several workers
// together. Each worker therefore also spaces its own calls evenly at its share of the limit:
// requests_per_second divided by the number of workers polling the API queue (api-fleet.ts).
// Each worker then sends at most ceil(rate / W) calls in any one-second window, so W workers
// together at most the limit plus one call per worker; the tolerance the tests allow and
// README.md documents. A worker serving two runs at once paces by the rate of each call's run.
import { ApplicationFailure } from '@temporalio/activity';

export interface PacerClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Longest a call waits here; beyond it the task goes back to the server for another worker. */
export const MAX_PACER_WAIT_MS = 10_000;

export class CallPacer {
  /** Epoch ms booked for the next caller to start. */
  #next = 0;
  /** Epoch ms at which the last call actually went out. */
  #lastRelease = Number.NEGATIVE_INFINITY;

  constructor(private readonly clock: PacerClock) {}

  /**
   * Waits for this worker's next slot at `ratePerSecond / workers`. Callers book slots in order
   * before waiting; on waking each also keeps one interval after the call actually released
   * before it, so a late wake-up (a busy event loop) never squeezes two calls together. An
   * aborted wait leaves its slot unused (errs towards fewer calls). A queue longer than
   * MAX_PACER_WAIT_MS is answered with a retryable, benign failure so the server can hand the
   * task to a less busy worker.
   */
  async acquire(ratePerSecond: number, workers: number, signal?: AbortSignal): Promise<void> {
    const interval = (1000 * Math.max(1, workers)) / ratePerSecond;
    const now = this.clock.now();
    const booked = Math.max(now, this.#next);
    if (booked - now > MAX_PACER_WAIT_MS) {
      throw ApplicationFailure.create({
        type: 'PacerBacklog',
        message: `this worker's API calls are booked ${Math.round((booked - now) / 1000)} s ahead; trying later`,
        nextRetryDelay: Math.min(booked - now, 30_000),
        category: 'BENIGN',
      });
    }
    this.#next = booked + interval;
    for (;;) {
      const wait = Math.max(booked, this.#lastRelease + interval) - this.clock.now();
      if (wait <= 0) break;
      await this.clock.sleep(wait, signal);
    }
    this.#lastRelease = this.clock.now();
  }
}

export const systemPacerClock: PacerClock = {
  now: Date.now,
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      // The listener goes when the sleep ends either way: one signal sees many sleeps.
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason as Error);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
