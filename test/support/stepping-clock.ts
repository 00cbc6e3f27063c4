// A pacer clock for tests that check spacing without waiting for it.
import type { PacerClock } from '../../activities/call-pacer.js';

/** A clock whose sleeps complete at once, advancing time by the amount slept. */
export function steppingClock(): PacerClock {
  let now = 1_000_000;
  return {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
    },
  };
}
