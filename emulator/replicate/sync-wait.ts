// Sync mode: a create with `Prefer: wait=n` is answered when its prediction ends (or its files are
// up, which here is the same moment) or after n seconds, whichever comes first, with the
// prediction as it then is. n is scaled by time_scale like every emulated duration.
//
// One clock timer per held request. A cancel moves a prediction's end: `rearm` wakes its holders
// at the new end. A request whose client went away, or an emulator closing, lets go at once.
import type { Clock, Timer } from '../core/clock.js';
import type { Prediction } from './predictions.js';

interface Hold {
  job: Prediction;
  until: number;
  timer: Timer | undefined;
  release: () => void;
}

export class SyncWaits {
  private readonly holds = new Set<Hold>();
  private closed = false;

  constructor(private readonly clock: Clock) {}

  /** Resolves when `job` has ended, at `until` (clock ms) at the latest, or when `abort` fires. */
  hold(job: Prediction, until: number, abort: AbortSignal): Promise<void> {
    if (this.closed || job.hasEndedAt(this.clock.now()) || this.clock.now() >= until || abort.aborted)
      return Promise.resolve();
    return new Promise((resolve) => {
      const hold: Hold = {
        job,
        until,
        timer: undefined,
        release: () => {
          hold.timer?.cancel();
          this.holds.delete(hold);
          abort.removeEventListener('abort', hold.release);
          resolve();
        },
      };
      this.holds.add(hold);
      abort.addEventListener('abort', hold.release);
      this.arm(hold);
    });
  }

  /** A cancel moved these predictions' ends. */
  rearm(jobs: readonly Prediction[]): void {
    const moved = new Set(jobs);
    for (const hold of this.holds) if (moved.has(hold.job)) this.arm(hold);
  }

  close(): void {
    this.closed = true;
    for (const hold of [...this.holds]) hold.release();
  }

  private arm(hold: Hold): void {
    hold.timer?.cancel();
    const now = this.clock.now();
    const at = Math.min(hold.until, hold.job.outcome === 'stuck' ? Infinity : hold.job.endsAt);
    if (at <= now) {
      hold.release();
      return;
    }
    hold.timer = this.clock.setTimeout(() => this.arm(hold), at - now);
  }
}
