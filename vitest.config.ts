import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/longest-first.js';

/**
 * The chaos test runs alone, after everything else. It counts the submits a SIGKILL repeats,
 * which depends on how long a starved worker takes to read the API's answer: p99 12 ms on its
 * own, 105 ms beside six busy processes on these two cores. Beside other test files it would
 * measure this machine's load more than pixelmill (RELIABILITY.md).
 */
const ALONE = ['test/chaos.test.ts'];

export default defineConfig({
  test: {
    // Tests start real servers (Temporal dev server, emulator); on 2 cores a few files at a time is fastest.
    maxWorkers: 2,
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Longest first, also on a fresh clone with no durations of a previous run (CI).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        extends: true,
        test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: ALONE, sequence: { groupOrder: 0 } },
      },
      { extends: true, test: { name: 'alone', include: ALONE, sequence: { groupOrder: 1 } } },
    ],
  },
});
