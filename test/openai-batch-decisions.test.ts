// The batch shard's decisions (workflows/batch-shard-state.ts), without a server: what a round's
// outcomes make final, what goes to the next round under the retry policy, an expired batch's
// unfinished items, a batch whose every request failed, a batch that failed validation.
import { describe, expect, it } from 'vitest';
import type { BatchStatusOutput, CollectedOutcome } from '../common/batch-types.js';
import { batchPollWaits } from '../manifest/normalize.js';
import {
  applyRound,
  batchCounts,
  creditsOf,
  endOpen,
  endOverBudget,
  freshBatchState,
  itemsWithinAllowance,
  nextPollMs,
  openItems,
  startRound,
} from '../workflows/batch-shard-state.js';

const retry = { maxAttempts: 2, on: ['generation_error', 'task_timeout', 'result_expired', 'task_expired'] };
const indexOf = (k: number) => 1000 + k;

function round(count: number, outcomes: CollectedOutcome[], batch: BatchStatusOutput) {
  const s = freshBatchState(count, 100, false, false);
  const items = startRound(s, indexOf);
  s.batchId = 'batch_1';
  applyRound(
    s,
    { items, outcomes, batch, images: outcomes.filter((o) => o.s === 'completed').length },
    retry,
    undefined,
  );
  return s;
}

const done = (cost = 0.02): CollectedOutcome => ({ s: 'completed', cost, images: 1, taskId: 't' });

describe('a round of the batch shard', () => {
  it('keeps what completed and sends the unfinished of an expired batch to the next round', () => {
    const s = round(4, [done(), done(), { s: 'missing' }, { s: 'missing' }], { status: 'expired' });
    expect(s.final).toEqual(['completed', 'completed', null, null]);
    expect(openItems(s)).toEqual([2, 3]);
    expect(s.round).toBe(2);
    expect(s.outcomes).toEqual([]);
    expect(creditsOf(s)).toBe(0.04);
    // The next round sends only those, at attempt 2.
    expect(startRound(s, indexOf)).toEqual([
      { index: 1002, attempt: 2 },
      { index: 1003, attempt: 2 },
    ]);
  });

  it('ends items expired once their attempts are spent, never completed', () => {
    const s = freshBatchState(1, 100, false, false);
    for (let r = 0; r < 2; r++) {
      const items = startRound(s, indexOf);
      applyRound(
        s,
        { items, outcomes: [{ s: 'missing' }], batch: { status: 'expired' }, images: 0 },
        retry,
        undefined,
      );
    }
    expect(s.final).toEqual(['expired']);
    expect(s.outcomes).toEqual([
      expect.objectContaining({
        index: 1000,
        status: 'expired',
        attempts: 2,
        error: expect.objectContaining({ code: 'batch_expired' }),
      }),
    ]);
  });

  it('fails a moderated request at once, retries a server error', () => {
    const moderated: CollectedOutcome = {
      s: 'failed',
      cost: 0,
      taskId: 'batch_1/x',
      error: { type: 'content_policy_violation', code: 'moderation_blocked', message: 'no' },
    };
    const flaky: CollectedOutcome = {
      s: 'failed',
      cost: 0,
      taskId: 'batch_1/y',
      error: { type: 'generation_error', code: 'server_error', message: 'oops' },
    };
    const s = round(3, [done(), moderated, flaky], { status: 'completed' });
    expect(s.final).toEqual(['completed', 'failed', null]);
    expect(s.outcomes).toEqual([
      expect.objectContaining({ index: 1001, status: 'failed', taskId: 'batch_1/x', attempts: 1 }),
    ]);
    expect(s.stopReason).toBeUndefined();
  });

  it('says so when every request of a batch failed, with the first reason', () => {
    const failed: CollectedOutcome = {
      s: 'failed',
      cost: 0,
      taskId: 'b/x',
      error: { type: 'BadRequestError', code: 'invalid_value', message: 'bad' },
    };
    const s = round(2, [failed, failed], { status: 'completed' });
    expect(s.final).toEqual(['failed', 'failed']);
    expect(s.stopReason).toMatch(/every request of round 1's batch failed: invalid_value: bad/);
    expect(batchCounts(s)).toMatchObject({ failed: 2, completed: 0 });
  });

  it("fails every item of a batch that failed validation with the batch's reason", () => {
    const failure = {
      type: 'BadRequestError',
      code: 'invalid_request',
      message: 'the batch failed validation: bad line',
    };
    const s = round(2, [{ s: 'missing' }, { s: 'missing' }], { status: 'failed', failure });
    expect(s.final).toEqual(['failed', 'failed']);
    expect(s.outcomes.map((o) => o.error)).toEqual([failure, failure]);
  });

  it('retries an item a completed batch has no line for', () => {
    const s = round(1, [{ s: 'missing' }], { status: 'completed' });
    expect(s.final).toEqual([null]);
  });

  it('ends the unfinished of a batch pixelmill cancelled at the deadline as cancelled, and the unsent too', () => {
    const s = freshBatchState(3, 100, false, false);
    const items = startRound(s, indexOf).slice(0, 2);
    s.inRound = [0, 1];
    s.attempts[2] = 0;
    s.cancelAsked = 'deadline';
    applyRound(
      s,
      { items, outcomes: [done(), { s: 'missing' }], batch: { status: 'cancelled' }, images: 1 },
      retry,
      Date.UTC(2026, 0, 1),
    );
    expect(s.final).toEqual(['completed', 'cancelled', null]);
    expect(s.outcomes[0]).toMatchObject({ status: 'cancelled', error: { code: 'deadline' } });
    expect(endOpen(s, indexOf, { type: 'DeadlinePassed', code: 'deadline', message: 'late' })).toBe(1);
    expect(batchCounts(s)).toMatchObject({ completed: 1, cancelled: 2 });
  });

  it('polls with waits growing half again each time, to 20 times the first', () => {
    let wait = 100;
    const waits = [];
    for (let k = 0; k < 12; k++) waits.push((wait = nextPollMs(wait, 100)));
    expect(waits.slice(0, 3)).toEqual([150, 225, 338]);
    expect(Math.max(...waits)).toBe(2000);
    expect(nextPollMs(30_000 * 19, 30_000)).toBe(600_000);
  });

  it('without poll_interval, polls first after 2 s and grows to 10 minutes: a short batch is seen in seconds', () => {
    const { pollMs, maxPollMs } = batchPollWaits(undefined);
    expect(pollMs).toBe(2_000);
    let at = 0;
    let wait = pollMs;
    const polls: number[] = [];
    while (at < 3_600_000) {
      polls.push((at += wait));
      wait = nextPollMs(wait, pollMs, maxPollMs);
    }
    // The embedded demo's batch ends within 2-11 s: polled at 2, 5, 9.5 and 16.25 s.
    expect(polls.slice(0, 4)).toEqual([2_000, 5_000, 9_500, 16_250]);
    expect(Math.max(...polls.map((p, k) => p - (polls[k - 1] ?? 0)))).toBe(600_000);
    // A batch of an hour: under 20 calls (a batch of 500 items: a few hundredths of a call per image).
    expect(polls.length).toBeLessThan(20);
    expect(batchPollWaits(120_000)).toEqual({ pollMs: 120_000, maxPollMs: 600_000 });
    expect(batchPollWaits(100)).toEqual({ pollMs: 100, maxPollMs: 2_000 });
  });
});

describe("a batch shard's allowance (budget_credits)", () => {
  it('cuts the first round to the items whose estimates fit, and ends the rest skipped', () => {
    const s = freshBatchState(5, 100, false, false);
    s.estimates = [0.02, 0.02, 0.02, 0.02, 0.02];
    const fit = itemsWithinAllowance(s, 0.07);
    expect(fit).toBe(3);
    expect(endOverBudget(s, indexOf, fit)).toBe(2);
    expect(s.budgetStopped).toBe(true);
    expect(s.final).toEqual([null, null, null, 'skipped', 'skipped']);
    expect(s.outcomes.map((o) => [o.index, o.status, o.error?.code])).toEqual([
      [1003, 'skipped', 'budget_exhausted'],
      [1004, 'skipped', 'budget_exhausted'],
    ]);
    expect(startRound(s, indexOf, fit).map((item) => item.index)).toEqual([1000, 1001, 1002]);
  });

  it('counts what the earlier rounds charged before a retry round', () => {
    const s = freshBatchState(4, 100, false, false);
    s.estimates = [0.02, 0.02, 0.02, 0.02];
    const items = startRound(s, indexOf, itemsWithinAllowance(s, 0.1));
    expect(items).toHaveLength(4);
    // Two completed at a higher cost than estimated; two expired, for the retry round.
    applyRound(
      s,
      {
        items,
        outcomes: [done(0.04), done(0.04), { s: 'missing' }, { s: 'missing' }],
        batch: { status: 'expired' },
        images: 2,
      },
      retry,
      undefined,
    );
    // 0.08 charged: one more estimate (0.02) fits in 0.1, the second would pass it.
    const fit = itemsWithinAllowance(s, 0.1);
    expect(fit).toBe(1);
    expect(endOverBudget(s, indexOf, fit)).toBe(1);
    expect(startRound(s, indexOf, fit)).toEqual([{ index: 1002, attempt: 2 }]);
    expect(s.final[3]).toBe('skipped');
  });

  it('sends nothing when the allowance is spent, and everything within it untouched', () => {
    const spent = freshBatchState(2, 100, false, false);
    spent.estimates = [0.5, 0.5];
    expect(itemsWithinAllowance(spent, 0.4)).toBe(0);
    expect(endOverBudget(spent, indexOf, 0)).toBe(2);
    expect(openItems(spent)).toEqual([]);

    const ample = freshBatchState(3, 100, false, false);
    ample.estimates = [0.1, 0.1, 0.1];
    expect(itemsWithinAllowance(ample, 0.3)).toBe(3);
    expect(endOverBudget(ample, indexOf, 3)).toBe(0);
    expect(ample.budgetStopped).toBeUndefined();
  });
});
