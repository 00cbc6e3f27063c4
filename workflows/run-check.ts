// A shard's check that its run is still there. Shards outlive their run's executions (they start
// with ParentClosePolicy.ABANDON, so that the run can continue as new), so a run terminated from
// the Temporal UI would leave them submitting, and spending, with nobody to collect the report.
// A shard that submits tells the run its progress every RUN_CHECK_MS; a run that is gone refuses
// the signal, and the shard then submits nothing more, stores what is in flight and ends.
import { isCancellation } from '@temporalio/workflow';

/** At most this long of submits after a run's end (default; limits.runCheckMs). */
export const RUN_CHECK_MS = 10_000;
/** A paused shard checks this many times less often (5 minutes): one whose run ended must still end. */
const PAUSED_SLOWER = 30;
/** How the SDK words a signal refused because its target is not running ("...because it was not found"). */
const NOT_THERE = /not found/i;

export class RunCheck {
  readonly #tellRun: () => Promise<void>;
  readonly #everyMs: number;
  #checkedAt = Date.now();
  #gone = false;

  /** `tellRun`: a signal to the run. */
  constructor(tellRun: () => Promise<void>, everyMs = RUN_CHECK_MS) {
    this.#tellRun = tellRun;
    this.#everyMs = everyMs;
  }

  /** The longest a paused shard waits before checking. */
  pausedWaitMs(): number {
    return this.#everyMs * PAUSED_SLOWER;
  }

  /** Whether it is time to tell the run again: RUN_CHECK_MS since the last one was answered. */
  due(): boolean {
    return !this.#gone && Date.now() - this.#checkedAt >= this.#everyMs;
  }

  /** Tells the run now: false when it is not there, and from then on. A cancel of the shard passes through. */
  async check(): Promise<boolean> {
    if (this.#gone) return false;
    try {
      await this.#tellRun();
    } catch (error) {
      if (isCancellation(error)) throw error;
      // Any other refusal (a limit on signals) leaves the run where it was: running.
      this.#gone = error instanceof Error && NOT_THERE.test(error.message);
    } finally {
      // From the answer, not the ask: a signal slower than the period would make every turn a
      // check, and the shard would check its run over and over and submit nothing.
      this.#checkedAt = Date.now();
    }
    return !this.#gone;
  }
}
