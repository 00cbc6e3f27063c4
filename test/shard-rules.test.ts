// The shard's pure rules (workflows/tracking.ts): counting by phase, the lookup pacing, retries.
import { describe, expect, it } from 'vitest';
import {
  accountRefusal,
  countItems,
  LOOKUP_YIELD,
  lookupTarget,
  nextPollDelay,
  firstOverdueAt,
  overdueItems,
  Phase,
  shouldResubmit,
  taskTimedOut,
} from '../workflows/tracking.js';
import { parseDuration } from '../manifest/durations.js';
import { DEFAULTS } from '../manifest/normalize.js';

describe('countItems', () => {
  const phases = [
    Phase.queued,
    Phase.submitting,
    Phase.submitted,
    Phase.submitted,
    Phase.storing,
    Phase.completed,
  ];

  it('puts every item in exactly one count', () => {
    const counts = countItems(phases);
    // Being submitted is not submitted: the API has not accepted it yet.
    expect(counts).toMatchObject({ queued: 2, submitted: 2, processing: 0, storing: 1, completed: 1 });
    expect(Object.values(counts).reduce((sum, n) => sum + n, 0)).toBe(phases.length);
  });

  it('counts submitted items a lookup saw being generated as processing, and nothing else', () => {
    // Index 4 is past the API (collecting) and 0 never reached it: neither is processing.
    const counts = countItems(phases, new Set([0, 3, 4]));
    expect(counts).toMatchObject({ queued: 2, submitted: 1, processing: 1, completed: 1 });
    expect(Object.values(counts).reduce((sum, n) => sum + n, 0)).toBe(phases.length);
  });
});

describe('lookupTarget', () => {
  it('is LOOKUP_YIELD for a shard with many slots, half its slots for a small one', () => {
    expect(lookupTarget(500)).toBe(LOOKUP_YIELD);
    expect(lookupTarget(10)).toBe(5);
  });

  it("is half of what is left in a shard's tail, at least one", () => {
    expect(lookupTarget(500, 30)).toBe(15);
    expect(lookupTarget(500, 1000)).toBe(LOOKUP_YIELD);
    expect(lookupTarget(500, 0)).toBe(1);
  });
});

describe('nextPollDelay', () => {
  it('doubles while nothing finishes, up to the maximum', () => {
    expect(nextPollDelay(1_000, 0, 100, 1_000, 10_000)).toBe(2_000);
    expect(nextPollDelay(9_000, 0, 100, 1_000, 10_000)).toBe(10_000);
  });

  it('aims for the target at the rate the last lookup saw', () => {
    // 50 finished in 4 s: 100 take 8 s; 200 in 4 s: 100 take 2 s.
    expect(nextPollDelay(4_000, 50, 100, 1_000, 10_000)).toBe(8_000);
    expect(nextPollDelay(4_000, 200, 100, 1_000, 10_000)).toBe(2_000);
    expect(nextPollDelay(4_000, 10, 5, 1_000, 10_000)).toBe(2_000);
  });

  it('moves by at most a factor of two per lookup, within the bounds', () => {
    expect(nextPollDelay(4_000, 1, 100, 1_000, 20_000)).toBe(8_000);
    expect(nextPollDelay(4_000, 400, 1, 1_000, 20_000)).toBe(2_000);
    expect(nextPollDelay(1_000, 400, 100, 1_000, 20_000)).toBe(1_000);
    expect(nextPollDelay(8_000, 1, 100, 1_000, 10_000)).toBe(10_000);
  });
});

describe('shouldResubmit', () => {
  const retry = { maxAttempts: 3, on: ['GenerationFailed', 'timeout'] };
  it('resubmits a listed error type or code until the attempts run out', () => {
    const error = { type: 'GenerationFailed', code: 'model_error', message: 'boom' };
    expect(shouldResubmit(error, 1, retry)).toBe(true);
    expect(shouldResubmit({ ...error, type: 'Other', code: 'timeout' }, 2, retry)).toBe(true);
    expect(shouldResubmit(error, 3, retry)).toBe(false);
    expect(shouldResubmit({ ...error, type: 'ContentBlocked', code: 'blocked' }, 1, retry)).toBe(false);
  });
});

describe('accountRefusal', () => {
  const failure = (type: string) => ({ type, code: 'x', message: 'refused' });
  it('pauses the run for the account refusals, with what to do', () => {
    expect(accountRefusal(failure('InsufficientCreditsError'))).toMatch(/^the API answered 402 .*top up/);
    expect(accountRefusal(failure('AuthenticationError'))).toMatch(
      /^the API refused the key \(401\): refused; .*--new-run/,
    );
    expect(accountRefusal(failure('PermissionDeniedError'))).toMatch(
      /^the API refused this account access \(403\)/,
    );
  });
  it('leaves failures of the item itself to the item', () => {
    for (const type of ['BadRequestError', 'InvalidRequestError', 'ServerError', 'ActivityFailed'])
      expect(accountRefusal(failure(type))).toBeUndefined();
  });
});

describe('task timeouts', () => {
  it('finds the submitted items past the timeout, starting the clock of those without a time', () => {
    const phases = [Phase.submitted, Phase.submitted, Phase.storing, Phase.submitted, Phase.queued];
    const submittedAt: (number | null)[] = [1_000, 50_000, 0, null, null];
    expect(overdueItems(phases, submittedAt, 70_001, 60_000)).toEqual([0]);
    expect(submittedAt[3]).toBe(70_001);
    expect(submittedAt[4]).toBeNull(); // not at the API: no clock
  });
  it('knows when the first task at the API becomes overdue, for the lookup that finds it', () => {
    const phases = [Phase.submitted, Phase.submitted, Phase.storing, Phase.submitted];
    expect(firstOverdueAt(phases, [5_000, 2_000, 0, null], 60_000)).toBe(62_001);
    expect(firstOverdueAt([Phase.queued, Phase.storing], [1_000, 1_000], 60_000)).toBe(Infinity);
  });
  it('names the task and the limit; the default retry policy resubmits it', () => {
    const error = taskTimedOut('task_01ABC', 30 * 60_000);
    expect(error).toEqual({
      type: 'TaskTimedOut',
      code: 'task_timeout',
      message: 'the API had not finished task task_01ABC after 30 min (limits.task_timeout); it was given up',
    });
    expect(shouldResubmit(error, 1, { maxAttempts: 3, on: DEFAULTS.retryOn })).toBe(true);
    expect(shouldResubmit(error, 3, { maxAttempts: 3, on: DEFAULTS.retryOn })).toBe(false);
  });
});

describe('durations', () => {
  it('reads what people write, and nothing else', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    for (const bad of ['', '90', 's', '-5s', '5 minutes', '1h 30x'])
      expect(parseDuration(bad)).toBeUndefined();
  });
});
