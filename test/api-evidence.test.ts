// The rule that tells a submit the API refuses for its own sake from an outage or a flaky
// stretch (activities/api-evidence.ts), without a server.
import { describe, expect, it } from 'vitest';
import { BadRequestError, RateLimitError, ServerError } from '../api/index.js';
import { ApiEvidence, MIN_SUBMIT_TRIES, retryDelayAfter, triesToRefuse } from '../activities/api-evidence.js';

describe('triesToRefuse', () => {
  it('never blames an item while no other submit is accepted (an outage)', () => {
    expect(triesToRefuse(0, 0)).toBe(Infinity);
    expect(triesToRefuse(0, 500)).toBe(Infinity);
  });

  it('takes the minimum when the others are mostly accepted', () => {
    expect(triesToRefuse(1_000, 0)).toBe(MIN_SUBMIT_TRIES);
    // The chaos suite's 5% of server errors.
    expect(triesToRefuse(950, 50)).toBe(MIN_SUBMIT_TRIES);
  });

  it('takes more tries the fewer answers it has, and the more the API fails others', () => {
    expect(triesToRefuse(7, 0)).toBe(7);
    expect(triesToRefuse(1, 0)).toBe(13);
    expect(triesToRefuse(500, 500)).toBe(20);
    expect(triesToRefuse(100, 900)).toBeGreaterThan(100);
    expect(triesToRefuse(100, 400)).toBeGreaterThan(triesToRefuse(100, 100));
  });
});

describe('retryDelayAfter', () => {
  it('doubles with the failures, from 1 s to at most a minute', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 30].map(retryDelayAfter)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000,
    ]);
  });
});

describe('ApiEvidence', () => {
  const details = { endpoint: 'submit', httpStatus: 500 };
  const failure = () => new ServerError('boom', details);

  it("counts the other submits' outcomes since a moment, not the submit's own", () => {
    let now = 0;
    const evidence = new ApiEvidence(() => now);
    evidence.succeeded('submit', 'a');
    now = 10;
    evidence.failed('submit', failure(), 'mine');
    evidence.succeeded('submit', 'b');
    evidence.failed('submit', failure(), 'c');
    evidence.failed('query', failure(), 'lookup');
    now = 20;
    evidence.succeeded('submit', 'd');
    expect(evidence.submitsSince(10, 'mine')).toEqual({ accepted: 2, failed: 1 });
    expect(evidence.submitsSince(15, 'mine')).toEqual({ accepted: 1, failed: 0 });
    expect(evidence.submitsSince(0, 'b')).toEqual({ accepted: 2, failed: 2 });
  });

  it('counts another submit that keeps failing once: a second refused item is not a flaky API', () => {
    const evidence = new ApiEvidence(() => 0);
    for (let k = 0; k < 6; k++) evidence.failed('submit', failure(), 'poisoned-too');
    evidence.succeeded('submit', 'a');
    expect(evidence.submitsSince(0, 'mine')).toEqual({ accepted: 1, failed: 1 });
  });

  it('tells whether the API answered another call since a moment (an outage: none did)', () => {
    let now = 0;
    const evidence = new ApiEvidence(() => now);
    evidence.succeeded('submit', 'a');
    now = 10;
    evidence.failed('submit', failure(), 'b');
    evidence.failed('query', failure(), 'lookup');
    evidence.succeeded('submit', 'mine');
    expect(evidence.answeredSince(5, 'mine')).toBe(false);
    expect(evidence.answeredSince(0, 'mine')).toBe(true);
    now = 12;
    evidence.succeeded('query', 'lookup');
    expect(evidence.answeredSince(5, 'mine')).toBe(true);
  });

  it('ignores 429s and answers that are no API error: neither counts for or against', () => {
    const evidence = new ApiEvidence(() => 0);
    evidence.failed('submit', new Error('a bug'), 'x');
    evidence.failed('submit', new RateLimitError('slow down', { ...details, httpStatus: 429 }), 'x');
    evidence.failed('submit', new BadRequestError('bad size', { ...details, httpStatus: 400 }), 'x');
    expect(evidence.submitsSince(0, 'mine')).toEqual({ accepted: 0, failed: 0 });
  });
});
