// How many tasks a shard keeps at a provider that limits tasks running at once (workflows/concurrency-cap.ts).
import { describe, expect, it } from 'vitest';
import {
  afterQueue,
  afterRefusal,
  capNow,
  holdingSlots,
  queueMargin,
  RELEASE_MIN_SAMPLES,
  releaseAgeMs,
  startCap,
} from '../workflows/concurrency-cap.js';
import { concurrencyStart } from '../workflows/run-shards.js';

describe('concurrency cap', () => {
  it('doubles every generation until a signal (slow start): one more per finished task', () => {
    const state = startCap(2, 10);
    expect(capNow(state, 10)).toBe(2);
    // 2 tasks finished (a generation at cap 2): 4; 4 more: 8; 8 more: 16.
    expect(capNow(state, 12)).toBe(4);
    expect(capNow(state, 16)).toBe(8);
    expect(capNow(state, 24)).toBe(16);
  });

  it('the first refusal sets the cap to what the provider holds, then it grows by one per cap of finished tasks', () => {
    const state = afterRefusal(startCap(4, 0), 24, 100);
    expect(state.probing).toBe(false);
    expect(capNow(state, 100)).toBe(24);
    expect(capNow(state, 123)).toBe(24);
    expect(capNow(state, 124)).toBe(25);
    expect(capNow(state, 148)).toBe(26);
    expect(afterRefusal(startCap(4, 0), 0, 5).base).toBe(1);
  });

  it('a later refusal takes one off the cap, whatever the shard counted at the provider', () => {
    const found = afterRefusal(startCap(4, 0), 24, 100);
    // 124 done: cap 25; refused while the shard counted 17 holding slots (its guess by age).
    const again = afterRefusal(found, 17, 124);
    expect(capNow(again, 124)).toBe(24);
    expect(afterRefusal(afterRefusal(startCap(1, 0), 1, 0), 1, 0).base).toBe(1);
  });

  it('takes a task as finished once it is older than most generations were, and says when the next will be', () => {
    expect(releaseAgeMs(Array.from({ length: RELEASE_MIN_SAMPLES - 1 }, () => 1000))).toBeUndefined();
    const samples = Array.from({ length: 20 }, (_, at) => 1000 + at * 100);
    expect(releaseAgeMs(samples)).toBe(1900);
    // Submitted at 0, 500 and 1500; 2 more on their way; at 2000, the first is past 1900.
    expect(holdingSlots([0, 500, 1500], 2, 2000, 1900)).toEqual({ holding: 4, nextReleaseAtMs: 2400 });
    expect(holdingSlots([0, 500, 1500], 2, 2000, undefined)).toEqual({
      holding: 5,
      nextReleaseAtMs: Number.POSITIVE_INFINITY,
    });
    expect(holdingSlots([], 0, 2000, 1900).nextReleaseAtMs).toBe(Number.POSITIVE_INFINITY);
  });

  it('a queue longer than the margin brings the cap down to what runs plus the margin; a short one changes nothing', () => {
    const probing = startCap(16, 0);
    // Cap 64 after 48 finished; 40 running, 20 waiting: 40 run, plus a margin of 4.
    const cut = afterQueue(probing, 40, 20, 48);
    expect(capNow(cut, 48)).toBe(40 + queueMargin(40));
    expect(capNow(cut, 48)).toBe(44);
    expect(cut.probing).toBe(false);
    // 3 waiting is within cap 44's margin of 5: kept as it is.
    expect(afterQueue(cut, 44, 3, 48)).toBe(cut);
  });

  it("starts each shard at its share of the provider's documented concurrency", () => {
    expect(concurrencyStart(24, 2)).toBe(12);
    expect(concurrencyStart(2, 2)).toBe(1);
    expect(concurrencyStart(undefined, 1)).toBe(4);
  });
});
