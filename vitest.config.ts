import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests start real servers (Temporal dev server, emulator); on 2 cores a few files at a time is fastest.
    maxWorkers: 2,
    setupFiles: ['test/support/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
