// Time as the emulator sees it. Injected so that tests can drive time instead of sleeping;
// `time_scale` compresses emulated durations on top of whichever clock is used.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Runs `fn` after `ms` milliseconds of this clock's time. */
  setTimeout(fn: () => void, ms: number): Timer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, ms);
    // Pending webhook retries must not keep a process alive that was asked to stop.
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};
