// The batch shard's clock decisions without a server: deadline, task_timeout, the waits they bound,
// why a batch is cancelled, and the result a shard ends with.
import { describe, expect, it } from 'vitest';
import {
  batchResult,
  cancelReason,
  msToDeadline,
  msToStop,
  timedOut,
} from '../workflows/batch-shard-clock.js';
import { freshBatchState } from '../workflows/batch-shard-state.js';

describe('batch shard clock', () => {
  const limits = { deadlineAt: 10_000, taskTimeoutMs: 3_000 };

  it('cancels for a cancel first, then the deadline, then task_timeout after the batch was created', () => {
    expect(cancelReason(limits, { cancelled: true, createdAt: 0 }, 0)).toBe('cancel');
    expect(cancelReason(limits, { cancelled: false, createdAt: 0 }, 10_000)).toBe('deadline');
    expect(cancelReason(limits, { cancelled: false, createdAt: 5_000 }, 8_000)).toBe('task_timeout');
    expect(cancelReason(limits, { cancelled: false, createdAt: 5_000 }, 7_999)).toBeUndefined();
    expect(timedOut(limits, { createdAt: undefined }, 1e9)).toBe(false);
  });

  it('waits until the first of the deadline and the batch timeout, at least 1 ms', () => {
    expect(msToStop(limits, { createdAt: 5_000 }, 6_000)).toBe(2_000);
    expect(msToStop(limits, { createdAt: 9_000 }, 6_000)).toBe(4_000);
    expect(msToStop({}, { createdAt: 0 }, 6_000)).toBe(Infinity);
    expect(msToStop(limits, { createdAt: 0 }, 20_000)).toBe(1);
    expect(msToDeadline({}, 0)).toBeUndefined();
    expect(msToDeadline(limits, 4_000)).toBe(6_000);
  });

  it('says a budget stop, and counts items ended by the deadline only when the deadline stopped it', () => {
    const s = freshBatchState(4, 1_000, false, false);
    s.budgetStopped = true;
    s.givenUp = 2;
    const byDeadline = batchResult(s, 3, 'deadline', 2);
    expect(byDeadline).toMatchObject({
      shard: 3,
      stopReason: 'budget exhausted',
      endedByDeadline: 2,
      tasksGivenUp: 2,
    });
    expect(batchResult(s, 3, 'cancelled', 2).endedByDeadline).toBeUndefined();
  });
});
