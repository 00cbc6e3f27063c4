// What `pixelmill run` does while it follows a run (client/watch.ts), with a stand-in for the
// Temporal client: once the run has ended, nothing of the watch is left to keep the process
// alive (its sampling timer once held every `pixelmill run` up to 5 s after its last line).
import type { Client } from '@temporalio/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { zeroCounts } from '../common/item-counts.js';
import type { RunResult } from '../common/types.js';
import type { RunHandle } from '../client/runs.js';
import { watchRun } from '../client/watch.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A client whose progress queries fail (no worker answers yet): the watch only waits. */
function silentClient(): { client: Client; queries: () => number } {
  let queries = 0;
  const client = {
    withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
    workflow: {
      getHandle: () => ({
        query: () => {
          queries++;
          return Promise.reject(new Error('no answer'));
        },
      }),
    },
  };
  return { client: client as unknown as Client, queries: () => queries };
}

const result: RunResult = {
  name: 'watched',
  counts: { ...zeroCounts(), completed: 1 },
  images: 1,
  creditsSpent: 1,
  apiCalls: { submit: 1, lookup: 1, get: 1 },
  reportFile: '/tmp/watched/report.jsonl',
  summaryFile: '/tmp/watched/summary.json',
};

describe('watchRun', () => {
  it('leaves no timer behind once the run has ended, so the command exits at once', async () => {
    vi.useFakeTimers();
    const { client, queries } = silentClient();
    let finish = (_result: RunResult): void => undefined;
    const handle = {
      workflowId: 'pixelmill/watched',
      describe: async () => ({ startTime: new Date() }),
      result: () => new Promise<RunResult>((resolve) => (finish = resolve)),
    };
    let printed = '';
    const watching = watchRun(client, handle as unknown as RunHandle, {
      tty: false,
      stream: { write: (text) => Boolean((printed += text)) },
    });
    // Until the watch has sampled once and sleeps until the next sample.
    for (let turn = 0; vi.getTimerCount() === 0; turn++) {
      expect(turn, 'the watch never waited for its next sample').toBeLessThan(1000);
      await Promise.resolve();
    }
    expect(queries()).toBe(1);

    finish(result);
    expect(await watching).toBe(0);
    expect(printed).toContain('pixelmill: watched: ');
    expect(vi.getTimerCount()).toBe(0);
  });
});
