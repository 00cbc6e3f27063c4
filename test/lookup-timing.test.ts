import { describe, expect, it } from 'vitest';
import { dueLookupDelay, GENERATION_SAMPLES, learnGenerationTimes } from '../workflows/lookup-timing.js';

const bounds = { minMs: 1000, maxMs: 10_000 };

describe('learnGenerationTimes', () => {
  it('takes the middle of the span in which each task finished', () => {
    // Found at 10 s; the last lookup was at 6 s: submitted at 2 s it finished at 6-10 s, aged 4-8 s;
    // submitted at 7 s (after that lookup) it finished at 7-10 s, aged 0-3 s.
    expect(learnGenerationTimes([], [2000, 7000], 6000, 10_000)).toEqual([6000, 1500]);
    // A shard's first lookup knows only that each finished after its submit.
    expect(learnGenerationTimes([], [2000], undefined, 10_000)).toEqual([4000]);
  });

  it('keeps the newest samples only', () => {
    const old = Array.from({ length: GENERATION_SAMPLES }, () => 1);
    const learned = learnGenerationTimes(old, [0, 0], 1000, 3000);
    expect(learned).toHaveLength(GENERATION_SAMPLES);
    expect(learned.slice(-2)).toEqual([2000, 2000]);
    expect(learned[0]).toBe(1);
  });
});

describe('dueLookupDelay', () => {
  it('has nothing to say before a generation time is known', () => {
    expect(
      dueLookupDelay({
        nowMs: 0,
        submittedAtMs: [0],
        lastLookupAtMs: undefined,
        samples: [],
        target: 1,
        ...bounds,
      }),
    ).toBe(undefined);
  });

  it('waits until enough tasks reach the generation time', () => {
    // 30 tasks submitted 3 s ago, every task so far took 5 s: all are due in 2 s.
    const submittedAtMs = Array.from({ length: 30 }, () => 7000);
    const due = {
      nowMs: 10_000,
      submittedAtMs,
      lastLookupAtMs: undefined,
      samples: [5000],
      target: 20,
      ...bounds,
    };
    expect(dueLookupDelay(due)).toBe(2000);
    // Only 10 of the 20 wanted can ever finish by the ages: the longest wait.
    expect(dueLookupDelay({ ...due, submittedAtMs: submittedAtMs.slice(0, 10) })).toBe(10_000);
  });

  it('counts tasks submitted at different times as each becomes due', () => {
    // One task a second from 0 to 9 s, samples 2 s and 4 s: a task aged under 2 s counts 0, 2-4 s
    // 0.5, 4 s or more 1. At 11 s: eight aged >= 4 s, two aged 2-3 s: 9. At 12 s: 9.5. At 13 s: 10.
    const submittedAtMs = Array.from({ length: 10 }, (_, k) => k * 1000);
    const due = {
      nowMs: 10_000,
      submittedAtMs,
      lastLookupAtMs: undefined,
      samples: [2000, 4000],
      target: 9,
      ...bounds,
    };
    expect(dueLookupDelay(due)).toBe(1000);
    expect(dueLookupDelay({ ...due, target: 10 })).toBe(3000);
  });

  it('counts a task unfinished at the last lookup by what is left of the distribution', () => {
    // Samples 2, 4, 6, 8 s; a task aged 5 s at the last lookup (at 10 s) had not finished, so it
    // finishes at 6 s or 8 s, half each: by 13 s (aged 8) surely, by 11 s (aged 6) half.
    const due = {
      nowMs: 10_000,
      submittedAtMs: [5000, 5000],
      lastLookupAtMs: 10_000,
      samples: [2000, 4000, 6000, 8000],
      target: 1,
      ...bounds,
    };
    expect(dueLookupDelay(due)).toBe(1000);
    expect(dueLookupDelay({ ...due, target: 2 })).toBe(3000);
  });

  it('counts a task older than every sample as finished', () => {
    const due = {
      nowMs: 60_000,
      submittedAtMs: [0],
      lastLookupAtMs: 59_000,
      samples: [5000],
      target: 1,
      ...bounds,
    };
    expect(dueLookupDelay(due)).toBe(bounds.minMs);
  });
});
