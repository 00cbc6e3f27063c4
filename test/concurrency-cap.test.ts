// How many tasks a shard keeps at a provider that limits tasks running at once (workflows/concurrency-cap.ts).
import { describe, expect, it } from 'vitest';
import {
  afterLookupQueue,
  afterRefusal,
  afterSubmitQueue,
  capNow,
  handedCap,
  handedHolding,
  holdingSlots,
  QUEUED_START,
  queueMargin,
  RELEASE_MIN_SAMPLES,
  refusalHoldUntil,
  releaseAgeMs,
  startCap,
} from '../workflows/concurrency-cap.js';
import { concurrencyStart, concurrentShards } from '../workflows/run-shards.js';

/** A slice sent and answered at the same moment, after any change of the cap. */
const NOW = { sentAtMs: 0, nowMs: 0 };

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

  it('a refusal holds the submits until a task of the shard ages out, and never longer than a typical generation', () => {
    const samples = [800, 1200, 1000, 900, 1100];
    // A task of its own is taken as finished at 1400: that is when the next submit tries.
    expect(refusalHoldUntil(1000, 1400, samples, 500)).toBe(1400);
    // Nothing of its own to wait for (every slot another shard's): again after the median, 1000.
    expect(refusalHoldUntil(1000, Number.POSITIVE_INFINITY, samples, 500)).toBe(2000);
    // No generation seen yet: after the shortest lookup interval.
    expect(refusalHoldUntil(1000, Number.POSITIVE_INFINITY, undefined, 500)).toBe(1500);
    expect(refusalHoldUntil(1000, Number.POSITIVE_INFINITY, [], 500)).toBe(1500);
  });

  it("a queuing provider's queue past the margin takes the shard's part of the excess off the cap", () => {
    const probing = startCap(16, 0);
    // Cap 64 after 48 finished; 3 shards share the account. Margin 7 a shard, 21 for the account;
    // 51 waited ahead of the slice: 30 too many, 10 of them this shard's.
    const cut = afterSubmitQueue(probing, 51, 3, 48, NOW);
    expect(queueMargin(64)).toBe(7);
    expect(capNow(cut, 48)).toBe(54);
    expect(cut.probing).toBe(false);
    // One shard alone takes off the whole excess.
    expect(capNow(afterSubmitQueue(probing, 51, 1, 48, NOW), 48)).toBe(64 - (51 - 7));
    // Never below one.
    expect(afterSubmitQueue(startCap(2, 0), 500, 1, 0, NOW).base).toBe(1);
  });

  it('a queue within the margin keeps the cap; an empty one grows it by a quarter, once probing has ended', () => {
    const found = afterSubmitQueue(startCap(64, 0), 20, 1, 16, NOW);
    expect(capNow(found, 16)).toBe(80 - (20 - queueMargin(80)));
    expect(afterSubmitQueue(found, 3, 1, 16, NOW)).toBe(found);
    expect(capNow(afterSubmitQueue(found, 0, 1, 16, NOW), 16)).toBe(68 + 17);
    // At a small cap, by the margin at least.
    const small = afterSubmitQueue(startCap(2, 0), 5, 1, 0, NOW);
    expect(capNow(afterSubmitQueue(small, 0, 1, 0, NOW), 0)).toBe(2);
    // Slow start goes on through an empty queue: each finished task adds one already.
    const probing = startCap(4, 0);
    expect(afterSubmitQueue(probing, 0, 1, 0, NOW)).toEqual({ ...probing, queueAtSubmit: true });
  });

  it('answers of slices sent before the cap last changed change it no more: they saw the queue it answered', () => {
    // Cap 60 (margin 6), 30 waiting: the first answer, at 1,000, takes 24 off.
    const found = afterRefusal(startCap(4, 0), 60, 0);
    const cut = afterSubmitQueue(found, 30, 1, 0, { sentAtMs: 900, nowMs: 1_000 });
    expect(capNow(cut, 0)).toBe(36);
    // Three more slices sent at 900 and 950 tell of the same queue: no more off, nor on.
    for (const sentAtMs of [900, 950, 990]) {
      expect(afterSubmitQueue(cut, 30, 1, 0, { sentAtMs, nowMs: 1_050 })).toBe(cut);
      expect(afterSubmitQueue(cut, 0, 1, 0, { sentAtMs, nowMs: 1_050 })).toBe(cut);
    }
    // A slice sent once the cap had changed tells of the queue since.
    expect(capNow(afterSubmitQueue(cut, 30, 1, 0, { sentAtMs: 1_000, nowMs: 1_200 }), 0)).toBe(36 - 26);
  });

  it('where submits do not say how many wait, a lookup that finds tasks queued brings the cap to what runs and the margin', () => {
    const probing = startCap(16, 0);
    // Cap 64 after 48 finished; 40 running, 20 waiting: 40 run, plus a margin of 4.
    const cut = afterLookupQueue(probing, 40, 20, 48);
    expect(capNow(cut, 48)).toBe(40 + queueMargin(40));
    expect(cut.probing).toBe(false);
    // 3 waiting is within cap 44's margin of 5: kept as it is.
    expect(afterLookupQueue(cut, 44, 3, 48)).toBe(cut);
    // Once a submit's answer has said, lookups change nothing: the submits see the whole queue.
    const told = afterSubmitQueue(probing, 0, 1, 48, NOW);
    expect(told.queueAtSubmit).toBe(true);
    expect(afterLookupQueue(told, 40, 20, 48)).toBe(told);
  });

  it('where the provider refuses and polls tell, no cap; a shard guessing which tasks run tries again as a slot should free', () => {
    expect(capNow(startCap(24, 0, true), 0)).toBe(Number.POSITIVE_INFINITY);
    const samples = [1400, 1500, 1600];
    // 30 tasks not known finished, generations of 1.5 s: one should free every 50 ms, tried at 100.
    expect(refusalHoldUntil(1000, Number.POSITIVE_INFINITY, samples, 500, { atProvider: 30 })).toBe(1100);
    // Never longer than a generation, nor past a task's release by age.
    expect(refusalHoldUntil(1000, Number.POSITIVE_INFINITY, samples, 500, { atProvider: 0 })).toBe(2500);
    expect(refusalHoldUntil(1000, 1050, samples, 500, { atProvider: 30 })).toBe(1050);
  });

  it("a run's next shard starts with its predecessor's cap and counts its tasks until their age says they finished", () => {
    const handed = handedCap(20, 0);
    expect(handed.probing).toBe(false);
    expect(capNow(handed, 0)).toBe(20);
    expect(capNow(handed, 20)).toBe(21);
    const samples = Array.from({ length: 20 }, (_, at) => 1000 + at * 100);
    // Release age 1900: of tasks submitted at 0, 500 and 1500, two still hold at 2000.
    expect(handedHolding([0, 500, 1500], 2000, releaseAgeMs(samples))).toEqual({
      holding: 2,
      nextReleaseAtMs: 2400,
    });
    // Too few generations seen to go by: taken as finished at once, a refusal says otherwise.
    expect(handedHolding([0, 500, 1500], 2000, releaseAgeMs(samples.slice(0, 3))).holding).toBe(0);
  });

  it('shards of a run submit one at a time where the provider refuses over its concurrency', () => {
    expect(concurrentShards(4, { maxInFlight: 500, concurrency: { documented: 24, refused: true } })).toBe(1);
    expect(concurrentShards(4, { maxInFlight: 500, concurrency: { documented: 40 } })).toBe(2);
    expect(concurrentShards(4, { maxInFlight: 500 })).toBe(2);
  });

  it("starts each shard at its share of the provider's documented concurrency, or of a first guess where it queues", () => {
    expect(concurrencyStart({ documented: 24, refused: true }, 2)).toBe(12);
    expect(concurrencyStart({ documented: 2, refused: true }, 2)).toBe(1);
    expect(concurrencyStart({ refused: true }, 1)).toBe(4);
    expect(concurrencyStart({ documented: 2 }, 2)).toBe(QUEUED_START / 2);
    expect(concurrencyStart({ documented: 100 }, 2)).toBe(50);
  });
});
