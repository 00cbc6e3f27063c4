// The benchmark's arithmetic (bench/figures.ts): medians of repeated rounds, field by field.
import { describe, expect, it } from 'vitest';
import { median, medianOfEach } from '../bench/figures.js';

describe('bench figures', () => {
  it('takes the median of an odd count, the mean of the middle two of an even one, and 0 of none', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBe(0);
  });

  it('folds rounds into one record, each figure its own median, a missing one left out', () => {
    const rounds = [
      { images_per_s: 80, ratio: 0.7, cpu: { pixelmill: 14, script: 8 }, note: 'a', script: null },
      { images_per_s: 90, ratio: 0.9, cpu: { pixelmill: 12, script: null }, note: 'b', script: null },
      { images_per_s: 70, ratio: 0.8, cpu: { pixelmill: 16, script: 10 }, note: 'c', script: null },
    ];
    expect(medianOfEach(rounds)).toEqual({
      images_per_s: 80,
      ratio: 0.8,
      cpu: { pixelmill: 14, script: 9 },
      note: 'a',
      script: null,
    });
  });
});
