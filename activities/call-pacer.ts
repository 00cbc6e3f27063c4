// The worker-side half of the global rate limit. Temporal's matching service dispatches API
// activities at the run's requests_per_second across all workers, but its token bucket lets a
// full second's worth through at once after a quiet spell, and hands a burst to several workers
// together. Each worker therefore also spaces its own calls evenly at its share of the limit:
// requests_per_second divided by the number of workers polling the API queue (api-fleet.ts).
// Each worker then sends at most ceil(rate / W) calls in any one-second window, so W workers
// together at most the limit plus one call per worker; the tolerance the tests allow and
// README.md documents. A worker serving two runs at once paces by the rate of each call's run.
import { ApplicationFailure } from '@temporalio/activity';
import { FailureType } from '../common/failure-types.js';

export interface PacerClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Longest a call waits here; beyond it the task goes back to the server for another worker. */
export const MAX_PACER_WAIT_MS = 10_000;

export class CallPacer {
  /** When the last call was due: the next is due one interval later. */
  #due = Number.NEGATIVE_INFINITY;
  /** When recent calls went out, oldest first: at most one window's worth. */
  readonly #releases: number[] = [];
  /** Settles when the last caller in line has gone (or given up): callers go one by one, in order. */
  #lineEnd: Promise<void> = Promise.resolve();
  #waiting = 0;

  constructor(private readonly clock: PacerClock) {}

  /**
   * Waits for this worker's next slot at `rate / workers`; a rate given as a function is read
   * again when the caller reaches the head of the line. Callers line up and go one
   * interval apart, in order. A wake-up that comes late (timers on a busy event loop fire a few
   * ms after their time) does not push the schedule back: the next call may go half an interval
   * after it, until the schedule is kept again. Were every lateness added to the next wait, a
   * worker held to 50/s would send 45. Lateness beyond one interval (a stall) is given up, not
   * caught up in a burst, and no one-second window ever holds more than ceil(rate / workers)
   * calls. An aborted wait leaves its slot to the next caller. A line longer than
   * MAX_PACER_WAIT_MS is answered with a retryable, benign failure so the server can hand the
   * task to a less busy worker.
   */
  async acquire(rate: number | (() => number), workers: number, signal?: AbortSignal): Promise<void> {
    const rateNow = (): number => (typeof rate === 'function' ? rate() : rate);
    let interval = (1000 * Math.max(1, workers)) / rateNow();
    const arrived = this.clock.now();
    const expected = Math.max(arrived, this.#due + interval * (this.#waiting + 1));
    if (expected - arrived > MAX_PACER_WAIT_MS) {
      throw ApplicationFailure.create({
        type: FailureType.PacerBacklog,
        message: `this worker's API calls are booked ${Math.round((expected - arrived) / 1000)} s ahead; trying later`,
        nextRetryDelay: Math.min(expected - arrived, 30_000),
        category: 'BENIGN',
      });
    }
    const ahead = this.#lineEnd;
    let gone!: () => void;
    this.#lineEnd = new Promise((resolve) => (gone = resolve));
    this.#waiting++;
    try {
      await ahead;
      signal?.throwIfAborted();
      // The caller ahead has just gone; one that arrives to an empty line starts a new schedule.
      // Only the head of the line writes the pacer's state, so its release time is fixed now,
      // at the rate in force now (a governed rate may have dropped while the caller waited).
      const ratePerSecond = rateNow();
      interval = (1000 * Math.max(1, workers)) / ratePerSecond;
      const perWindow = Math.ceil(ratePerSecond / Math.max(1, workers));
      const scheduled = Math.max(this.#due + interval, this.clock.now());
      const paced = Math.max(scheduled, (this.#releases.at(-1) ?? Number.NEGATIVE_INFINITY) + interval / 2);
      const windowOpens =
        this.#releases.length >= perWindow ? this.#releases.at(-perWindow)! + 1000 : Number.NEGATIVE_INFINITY;
      const heldByWindow = windowOpens > paced;
      const releaseAt = Math.max(paced, windowOpens);
      // A loop: a timer may fire a little early.
      for (let wait = releaseAt - this.clock.now(); wait > 0; wait = releaseAt - this.clock.now())
        await this.clock.sleep(wait, signal);
      const now = this.clock.now();
      // Held by the window, the schedule moves with the call (catching up would meet it again).
      this.#due = heldByWindow ? now : Math.max(scheduled, now - interval);
      this.#releases.push(now);
      if (this.#releases.length > perWindow) this.#releases.shift();
    } finally {
      this.#waiting--;
      gone();
    }
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
