// The worker-side pacer on a manual clock: calls are spaced at the worker's share of the rate,
// queued callers keep their order, a long queue is handed back to the server, and an aborted
// wait leaves its slot unused.
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { getEventListeners } from 'node:events';
import { CallPacer, MAX_PACER_WAIT_MS, systemPacerClock, type PacerClock } from '../activities/call-pacer.js';
import { rejection } from './support/assertions.js';

/** A clock whose sleeps complete at once, advancing time by the amount slept. */
function steppingClock(): PacerClock {
  let now = 1_000_000;
  return {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
    },
  };
}

describe('CallPacer', () => {
  it('spaces calls evenly at the rate: never more than the limit in a one-second window', async () => {
    const clock = steppingClock();
    const pacer = new CallPacer(clock);
    const starts: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      await pacer.acquire(5, 1);
      starts.push(clock.now());
    }
    const gaps = starts.slice(1).map((start, i) => start - starts[i]!);
    expect(new Set(gaps)).toEqual(new Set([200]));
    const inFirstSecond = starts.filter((start) => start < starts[0]! + 1000).length;
    expect(inFirstSecond).toBe(5);
  });

  it('divides the rate among the workers polling the API queue', async () => {
    const clock = steppingClock();
    const pacer = new CallPacer(clock);
    await pacer.acquire(10, 3);
    const first = clock.now();
    await pacer.acquire(10, 3);
    expect(clock.now() - first).toBe(300);
  });

  it('concurrent callers line up; a queue beyond the wait limit fails as a benign retry', async () => {
    let now = 0;
    const sleeps: number[] = [];
    const pacer = new CallPacer({
      now: () => now,
      // Waits never end here: only the booking is under test.
      sleep: (ms) => new Promise(() => void sleeps.push(ms)),
    });
    const slots = MAX_PACER_WAIT_MS / 1000; // at 1 call/s, the waits 0 .. MAX are all allowed
    for (let i = 0; i <= slots; i += 1) void pacer.acquire(1, 1);
    await Promise.resolve();
    expect(sleeps).toEqual(Array.from({ length: slots }, (_, i) => (i + 1) * 1000));
    const failure = await rejection(pacer.acquire(1, 1));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'PacerBacklog', nonRetryable: false, category: 'BENIGN' });
    now = 5_000;
    void pacer.acquire(1, 1); // the refused call booked nothing: this one waits 6 s, not 7
    await Promise.resolve();
    expect(sleeps.at(-1)).toBe(MAX_PACER_WAIT_MS + 1000 - 5_000);
  });

  it('after a stall, queued callers still go out one interval apart', async () => {
    let now = 0;
    const timers: { at: number; fire: () => void }[] = [];
    const pacer = new CallPacer({
      now: () => now,
      sleep: (ms) => new Promise<void>((fire) => void timers.push({ at: now + ms, fire })),
    });
    const releases: number[] = [];
    const calls = [0, 1, 2].map(() => pacer.acquire(5, 1).then(() => releases.push(now)));
    await Promise.resolve();
    // The event loop was blocked until 600 ms: the timers for 200 and 400 both fire late, at once.
    now = 600;
    const flush = async () => {
      const due = timers.filter((timer) => timer.at <= now);
      timers.splice(0, timers.length, ...timers.filter((timer) => timer.at > now));
      for (const timer of due) timer.fire();
      await new Promise((resolve) => setImmediate(resolve));
    };
    await flush();
    now = 800;
    await flush();
    await Promise.all(calls);
    expect(releases).toEqual([0, 600, 800]);
  });

  it('an aborted wait rejects with the abort reason', async () => {
    const pacer = new CallPacer({
      now: () => 0,
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    });
    await pacer.acquire(1, 1);
    const controller = new AbortController();
    const waiting = pacer.acquire(1, 1, controller.signal);
    controller.abort(new Error('activity cancelled'));
    await expect(waiting).rejects.toThrow('activity cancelled');
  });
});

describe('systemPacerClock', () => {
  it('leaves no abort listener behind once a sleep ends', async () => {
    const controller = new AbortController();
    for (let i = 0; i < 20; i += 1) await systemPacerClock.sleep(1, controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const sleeping = systemPacerClock.sleep(60_000, controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(sleeping).rejects.toThrow('cancelled');
  });
});
