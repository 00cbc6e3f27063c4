// The shard's bookkeeping without a server: how each answer moves an item, what the counts say,
// and what survives continue-as-new (the carried state rebuilt into a new ShardItems).
import { describe, expect, it } from 'vitest';
import type { ShardLimits } from '../common/types.js';
import { finishedItems } from '../common/item-counts.js';
import { creditsReserved, creditsSpent, nextWouldExceed } from '../workflows/shard-credits.js';
import { ShardIndices } from '../workflows/item-phases.js';
import { ShardItems } from '../workflows/shard-items.js';
import { countItems, freshShardState, Phase } from '../workflows/tracking.js';

const OFFSET = 1000;

function shardOf(count: number, limits: Partial<ShardLimits> = {}): ShardItems {
  return new ShardItems(freshShardState(count, false, false, 1000), new ShardIndices({ offset: OFFSET }), {
    maxInFlight: count,
    retry: { maxAttempts: 2, on: ['server_error', 'task_timeout'] },
    pollMinMs: 1000,
    pollMaxMs: 10_000,
    ...limits,
  });
}

/** Submits the next queued item and has the API take it as task `t<index>`. */
function submitNext(items: ShardItems, nowMs = 0): number {
  const { index } = items.startSubmit();
  items.submitted(index, `t${index}-${items.state.attempts[index]}`, nowMs);
  return index;
}

describe("a shard's items", () => {
  it('keep their counts by phase as they move, whatever the order of answers', () => {
    const items = shardOf(40, { taskTimeoutMs: 5_000 });
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n) as number;
    for (let step = 0; step < 400; step++) {
      const queued = items.count(Phase.queued);
      switch (random(5)) {
        case 0:
          if (queued > 0) submitNext(items, step * 100);
          break;
        case 1: {
          const { indices } = items.submittedTasks();
          const statuses = indices.map(() => ['completed', 'failed', 'processing', 'expired'][random(4)]!);
          items.lookedUp(indices, statuses);
          break;
        }
        case 2:
          for (const index of items.takeToCollect(5)) {
            const status = ['completed', 'failed', 'processing'][random(3)]!;
            const request = items.settle(index, {
              status,
              urls: ['u'],
              error: { type: 'X', code: 'server_error', message: 'm' },
            });
            if (request) items.stored([{ index: request.index, status: 'completed', images: 1 }]);
          }
          break;
        case 3:
          items.overdue(step * 100);
          break;
        default:
          if (queued > 0) items.requeueUntried(items.startSubmit().index);
      }
      const expected = countItems(items.state.phase);
      expect(items.count(Phase.queued)).toBe(items.state.phase.filter((p) => p === Phase.queued).length);
      expect(items.atApi()).toBe(expected.submitted + expected.storing + items.count(Phase.submitting));
      expect(items.notFinal()).toBe(items.state.phase.length - finishedItems(expected));
    }
    expect(items.count(Phase.completed)).toBeGreaterThan(0);
  });

  it('take a webhook that arrives before the submit returns, and skip the lookup and the GET', () => {
    const items = shardOf(2);
    const { index } = items.startSubmit();
    items.taskFinished({ taskId: 'fast', status: 'completed', urls: ['u1'], creditsCost: 3 });
    expect(items.count(Phase.submitting)).toBe(1);
    items.submitted(index, 'fast', 0);
    expect(items.count(Phase.storing)).toBe(1);
    expect(items.submittedTasks().taskIds).toEqual([]);
    expect(items.takeToCollect(10)).toEqual([index]);
    const result = items.knownResult(index)!;
    expect(items.settle(index, result)).toEqual({
      index: OFFSET + index,
      taskId: 'fast',
      urls: ['u1'],
      attempts: 1,
      creditsCost: 3,
    });
    expect(creditsSpent(items.state)).toBe(3);
    // A duplicate webhook changes nothing.
    items.taskFinished({ taskId: 'fast', status: 'completed', urls: ['u1'] });
    expect(items.hasToCollect()).toBe(false);
  });

  it('read a lookup: finished tasks to collect, lost ones ended, unknown statuses told with their task', () => {
    const items = shardOf(4);
    for (let i = 0; i < 4; i++) submitNext(items);
    const { indices } = items.submittedTasks();
    const { finished, unknown } = items.lookedUp(indices, ['completed', 'expired', 'processing', 'weird']);
    expect(finished).toBe(2);
    expect(unknown).toEqual([{ taskId: 't3-1', status: 'weird' }]);
    expect(items.counts()).toMatchObject({ storing: 1, expired: 1, processing: 1, submitted: 1 });
    expect(items.state.outcomes).toEqual([
      expect.objectContaining({ index: OFFSET + 1, status: 'expired', taskId: 't1-1' }),
    ]);
  });

  it('resubmit a failed task the retry policy names, and fail the others with their error', () => {
    const items = shardOf(2);
    submitNext(items);
    submitNext(items);
    items.lookedUp([0, 1], ['failed', 'failed']);
    const retried = { type: 'ServerError', code: 'server_error', message: 'boom' };
    const refused = { type: 'ContentPolicy', code: 'content_policy', message: 'no' };
    expect(items.settle(0, { status: 'failed', error: retried, creditsCost: 5 })).toBeUndefined();
    expect(items.settle(1, { status: 'failed', error: refused })).toBeUndefined();
    expect(items.count(Phase.queued)).toBe(1);
    expect(items.state.credits[0]).toBe(0); // a failed task is refunded
    expect(items.state.outcomes).toEqual([expect.objectContaining({ index: OFFSET + 1, error: refused })]);
    expect(items.startSubmit()).toEqual({ index: 0, attempt: 2 });
  });

  it('give up an overdue task only once its GET confirms it unfinished', () => {
    const items = shardOf(2, { taskTimeoutMs: 1_000 });
    submitNext(items, 0);
    submitNext(items, 500);
    expect(items.firstOverdueAt()).toBe(1_001);
    items.overdue(1_200);
    expect(items.takeToCollect(10)).toEqual([0]);
    // The GET finds it finished after all: stored, not given up.
    expect(items.settle(0, { status: 'completed', urls: ['u'] })).toBeDefined();
    items.overdue(2_000);
    expect(items.takeToCollect(10)).toEqual([1]);
    expect(items.settle(1, { status: 'processing' })).toBeUndefined();
    expect(items.state.givenUp).toBe(1);
    expect(items.count(Phase.queued)).toBe(1); // task_timeout is in the retry policy
  });

  it('say when the next submit would pass the allowance, counting charges read and estimates not', () => {
    const items = shardOf(3);
    items.state.estimates = [4, 4, 4];
    submitNext(items);
    expect(nextWouldExceed(items.state, 8)).toBe(false);
    expect(nextWouldExceed(items.state, 7)).toBe(true);
    expect(creditsReserved(items.state)).toBe(4);
    items.lookedUp([0], ['completed']);
    items.settle(0, { status: 'completed', urls: ['u'], creditsCost: 1 });
    expect(creditsReserved(items.state)).toBe(0);
    expect(nextWouldExceed(items.state, 5)).toBe(true); // committed at its estimate until it is stored
    items.stored([{ index: OFFSET, status: 'completed', images: 1 }]);
    expect(nextWouldExceed(items.state, 5)).toBe(false); // 1 charged + 4 estimated
  });

  it('end what was never submitted as the reason for stopping says', () => {
    for (const [reason, status, code] of [
      [{ cancelled: true }, 'cancelled', 'cancelled'],
      [{ cancelled: false }, 'skipped', 'budget_exhausted'],
      [
        { cancelled: false, deadline: { type: 'DeadlinePassed', code: 'deadline', message: 'm' } },
        'cancelled',
        'deadline',
      ],
    ] as const) {
      const items = shardOf(3);
      submitNext(items);
      const ended = items.endUnsubmitted(reason);
      expect(ended).toBe('deadline' in reason ? 2 : 0);
      expect(items.state.outcomes.map((o) => [o.status, o.error?.code])).toEqual([
        [status, code],
        [status, code],
      ]);
      expect(items.count(Phase.submitted)).toBe(1);
    }
  });

  it('come back from the carried state as they were: counts, tasks known, items to collect', () => {
    const items = shardOf(3);
    submitNext(items);
    submitNext(items);
    items.lookedUp([0], ['completed']);
    const again = new ShardItems(structuredClone(items.state), new ShardIndices({ offset: OFFSET }), {
      maxInFlight: 3,
      retry: { maxAttempts: 1, on: [] },
      pollMinMs: 1000,
      pollMaxMs: 10_000,
    });
    expect(again.counts()).toEqual(items.counts());
    expect(again.takeToCollect(10)).toEqual([0]);
    again.taskFinished({ taskId: 't1-1', status: 'completed', urls: ['u'] });
    expect(again.knownResult(1)).toBeDefined();
  });
  it('name the task the API accepted last, and one of theirs after continue-as-new', () => {
    const items = shardOf(3);
    expect(items.latestTaskId()).toBeUndefined();
    submitNext(items);
    const second = submitNext(items);
    expect(items.latestTaskId()).toBe(`t${second}-1`);
    // A new execution knows the carried task ids only, not their order.
    const carried = new ShardItems(items.state, new ShardIndices({ offset: OFFSET }), {
      maxInFlight: 3,
      retry: { maxAttempts: 2, on: [] },
      pollMinMs: 1000,
      pollMaxMs: 10_000,
    });
    expect(carried.latestTaskId()).toBe(`t${second}-1`);
  });
});
