// The worker-side pacer on a manual clock: calls are spaced at the worker's share of the rate,
// queued callers keep their order, a long queue is handed back to the server, and an aborted
// wait leaves its slot unused.
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { getEventListeners } from 'node:events';
import { CallPacer, MAX_PACER_WAIT_MS, systemPacerClock, type PacerClock } from '../activities/call-pacer.js';
import { busiestWindow } from '../bench/catalog-audit.js';
import { rejection } from './support/assertions.js';
import { steppingClock } from './support/stepping-clock.js';

/**
 * A clock whose timers fire `lateBy()` ms after they are due, in order, as the event loop of a
 * busy worker does, and none before `blockedUntil` (an event loop blocked until then); `run`
 * drives it until the work settles and returns what the work returned.
 */
function simulatedClock(lateBy: () => number, blockedUntil = 0) {
  let now = 0;
  const timers: { at: number; fire: () => void }[] = [];
  const clock: PacerClock = {
    now: () => now,
    sleep: (ms) =>
      new Promise<void>(
        (fire) => void timers.push({ at: Math.max(now + ms + lateBy(), blockedUntil), fire }),
      ),
  };
  async function run<T>(work: () => Promise<T>): Promise<T> {
    let settled = false;
    const result = work().finally(() => void (settled = true));
    while (!settled) {
      await new Promise((resolve) => setImmediate(resolve));
      timers.sort((a, b) => a.at - b.at);
      const next = timers.shift();
      if (!next) continue;
      now = Math.max(now, next.at);
      next.fire();
    }
    return result;
  }
  return { clock, run };
}

/** `count` callers queued at once at `rate` (one worker); the times they were let through, in order. */
async function queue(pacer: CallPacer, clock: PacerClock, count: number, rate: number): Promise<number[]> {
  const releases: number[] = [];
  await Promise.all(
    Array.from({ length: count }, () => pacer.acquire(rate, 1).then(() => releases.push(clock.now()))),
  );
  return releases;
}

/** The most releases in any one-second window [t, t + 1000). */
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

  it('concurrent callers line up; a line beyond the wait limit fails as a benign retry', async () => {
    let now = 0;
    const sleeps: number[] = [];
    const pacer = new CallPacer({
      now: () => now,
      // Waits never end here: only the line is under test.
      sleep: (ms) => new Promise(() => void sleeps.push(ms)),
    });
    await pacer.acquire(1, 1); // goes at once
    const slots = MAX_PACER_WAIT_MS / 1000; // at 1 call/s, waits of 1 .. MAX s are all allowed
    for (let i = 0; i < slots; i += 1) void pacer.acquire(1, 1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sleeps).toEqual([1000]); // only the first in line waits on the clock
    const failure = await rejection(pacer.acquire(1, 1));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'PacerBacklog', nonRetryable: false, category: 'BENIGN' });
    // The refused call took no place in line: at 1 s the next one is expected in exactly 10 s and
    // is taken; had the refused call kept a place, it would be 11 s ahead and refused.
    now = 1_000;
    const outcome = await Promise.race([
      pacer.acquire(1, 1).then(
        () => 'went',
        () => 'refused',
      ),
      new Promise((resolve) => setImmediate(() => resolve('waiting'))),
    ]);
    expect(outcome).toBe('waiting');
  });

  it('late wake-ups do not add up: a worker kept 3 ms late still sends at its rate', async () => {
    const sim = simulatedClock(() => 3);
    const pacer = new CallPacer(sim.clock);
    const releases = await sim.run(() => queue(pacer, sim.clock, 101, 50));
    // 100 intervals of 20 ms; each late wake-up pushing the next call back would take 2,300 ms.
    // The one-second window may still hold a call by the lateness once a second (3 ms a second).
    expect(releases.at(-1)! - releases[0]!).toBeLessThanOrEqual(2_000 + 3 + 2 * 3);
    expect(busiestWindow(releases)).toBeLessThanOrEqual(50);
  });

  it('catches up a late call at half an interval, never more than ceil(rate) in a second', async () => {
    // Wake-ups late by 0 to 15 ms of a 20 ms interval, in a repeating pattern.
    let k = 0;
    const sim = simulatedClock(() => [0, 15, 2, 9, 0, 14, 1][k++ % 7]!);
    const pacer = new CallPacer(sim.clock);
    const releases = await sim.run(() => queue(pacer, sim.clock, 300, 50));
    const gaps = releases.slice(1).map((at, i) => at - releases[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(10);
    expect(busiestWindow(releases)).toBeLessThanOrEqual(50);
    // Within 3% of the schedule; pushing every later call back by each lateness took 29% longer.
    expect(releases.at(-1)! - releases[0]!).toBeLessThan(299 * 20 * 1.03);
  });

  it('after a stall, queued callers make up one interval at most, within the window', async () => {
    const sim = simulatedClock(() => 0, 1_000);
    const pacer = new CallPacer(sim.clock);
    const releases = await sim.run(() => queue(pacer, sim.clock, 12, 5));
    // Due at 0, 200, 400, ...; the event loop is blocked until 1,000. The late call goes at once and
    // the next half an interval later, making up one interval; the rest of the stall is given up.
    // The one-second window then holds the sixth call until 2,000, and the schedule moves with it.
    expect(releases).toEqual([0, 1000, 1100, 1200, 1400, 1600, 2000, 2200, 2400, 2600, 2800, 3000]);
    expect(busiestWindow(releases)).toBeLessThanOrEqual(5);
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

describe('a rate that changes while callers wait (a governed rate)', () => {
  it('spaces the callers still in line at the rate in force when their turn comes', async () => {
    const { clock, run } = simulatedClock(() => 0);
    const pacer = new CallPacer(clock);
    let rate = 10;
    const releases: number[] = [];
    await run(() =>
      Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          pacer
            .acquire(() => rate, 1)
            .then(() => {
              releases.push(clock.now());
              // A 429 after the fifth call: the governor halves the rate for everyone in line.
              if (index === 4) rate = 5;
            }),
        ),
      ),
    );
    expect(busiestWindow(releases.slice(0, 5))).toBe(5);
    // After the change: never more than 5 in a second, and the 15 callers take about 3 s, not 1.5.
    const after = releases.slice(5);
    expect(busiestWindow(after)).toBeLessThanOrEqual(5);
    expect(after.at(-1)! - after[0]!).toBeGreaterThanOrEqual(14 * 190);
  });
});
