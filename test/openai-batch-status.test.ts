// What a batch run says of itself, without a server: a batch shard's batches (in flight with its
// requests by state, ended by how, its images against the enqueued limit, the next poll), added up
// over shards, and said in one vocabulary by the terminal, the Temporal UI's details and the run's
// totals, with no API rate (a batch run's few calls skip the rate gate).
import { describe, expect, it } from 'vitest';
import { renderLine } from '../client/display/frame.js';
import type { LiveProgress } from '../client/progress.js';
import { addBatchTotals, batchParts, describeBatches, zeroBatchTotals } from '../common/batch-totals.js';
import { zeroCounts } from '../common/item-counts.js';
import { batchProgress, batchResult } from '../workflows/batch-shard-clock.js';
import { applyRound, freshBatchState, startRound } from '../workflows/batch-shard-state.js';
import { pacingOf, runDetails } from '../workflows/run-details.js';
import { RunTotals } from '../workflows/run-totals.js';

const batchMode = {
  submission: 'batch-file' as const,
  batch: { pollMs: 2_000, retryIn: 'batch' as const, enqueuedImages: 5_000 },
};
const retry = { maxAttempts: 2, on: ['task_expired'] };
const NOW = Date.parse('2026-11-27T12:00:00Z');

/** A shard of `count` items whose round's batch is in flight, polled once (`completed` and `failed` of them run). */
function inFlight(count: number, completed: number, failed: number) {
  const s = freshBatchState(count, 2_000, false, false);
  startRound(s, (k) => k);
  s.batchId = 'batch_1';
  s.roundImages = count * 2;
  s.lastPoll = { status: 'in_progress', total: count, finished: completed + failed, completed, failed };
  s.nextPollAt = NOW + 12_000;
  return s;
}

describe("a batch shard's batches", () => {
  it('tells the batch in flight: its requests by state, its images against the limit, the next poll', () => {
    const { batches } = batchProgress(inFlight(500, 15, 5), 0, batchMode);
    expect(batches).toEqual({
      ...zeroBatchTotals(),
      inFlight: 1,
      requests: { waiting: 480, completed: 15, failed: 5 },
      enqueuedImages: 1_000,
      enqueuedLimit: 5_000,
      nextPollAt: '2026-11-27T12:00:12.000Z',
    });
    // Before its first status call, every request of the batch waits.
    const fresh = inFlight(3, 0, 0);
    delete fresh.lastPoll;
    expect(batchProgress(fresh, 0, batchMode).batches?.requests).toEqual({
      waiting: 3,
      completed: 0,
      failed: 0,
    });
  });

  it('counts each batch by how it ended, and none in sync mode (held calls, no batches)', () => {
    const s = inFlight(2, 1, 0);
    const items = [
      { index: 0, attempt: 1 },
      { index: 1, attempt: 1 },
    ];
    const done = { s: 'completed' as const, cost: 0.01, images: 1, taskId: 't' };
    applyRound(
      s,
      { items, outcomes: [done, { s: 'missing' }], batch: { status: 'expired' }, images: 1 },
      retry,
      undefined,
    );
    startRound(s, (k) => k);
    s.batchId = 'batch_2';
    applyRound(
      s,
      { items: [{ index: 1, attempt: 2 }], outcomes: [done], batch: { status: 'completed' }, images: 1 },
      retry,
      undefined,
    );
    const result = batchResult(s, 0, undefined, 0, batchMode);
    expect(result.batches).toMatchObject({ inFlight: 0, completed: 1, expired: 1, failed: 0, cancelled: 0 });
    // A held-call round (sync mode) has no batch to count.
    const sync = freshBatchState(1, 2_000, false, false);
    startRound(sync, (k) => k);
    applyRound(
      sync,
      { items: [{ index: 0, attempt: 1 }], outcomes: [done], batch: { status: 'completed' }, images: 1 },
      retry,
      undefined,
    );
    expect(batchResult(sync, 0, undefined, 0, { submission: 'held-call' }).batches).toBeUndefined();
    expect(batchProgress(sync, 0, { submission: 'held-call' }).batches).toBeUndefined();
  });
});

describe("a batch run's batches in words", () => {
  const shardA = batchProgress(inFlight(500, 15, 5), 0, batchMode).batches!;
  const shardB = { ...zeroBatchTotals(), completed: 2, expired: 1, enqueuedLimit: 5_000 };

  it('adds shards up: counts summed, one limit, the soonest poll', () => {
    const later = { ...shardA, nextPollAt: '2026-11-27T12:05:00.000Z' };
    const sum = addBatchTotals(addBatchTotals(shardA, shardB), later);
    expect(sum).toMatchObject({
      inFlight: 2,
      completed: 2,
      expired: 1,
      requests: { waiting: 960, completed: 30, failed: 10 },
      enqueuedImages: 2_000,
      enqueuedLimit: 5_000,
      nextPollAt: '2026-11-27T12:00:12.000Z',
    });
  });

  it('says the same in the terminal and in the Temporal UI', () => {
    const sum = addBatchTotals(shardA, shardB);
    expect(batchParts(sum, NOW)).toEqual([
      'batches 1 in flight, 2 completed, 1 expired',
      'requests 480 waiting, 15 completed, 5 failed',
      'enqueued 1000 of 5000 images',
      'next poll in 12 s',
    ]);
    expect(describeBatches(sum)).toBe(
      'Batches: 1 in flight, 2 completed, 1 expired; requests 480 waiting, 15 completed, 5 failed; enqueued 1000 of 5000 images; next poll 12:00:12Z.',
    );
    // Finished: nothing in flight, nothing waiting, no next poll.
    expect(batchParts({ ...zeroBatchTotals(), completed: 3 })).toEqual(['batches 0 in flight, 3 completed']);
  });

  it('shows batches where a run shows its rate: the terminal line and the run details', () => {
    const progress: LiveProgress = {
      run: {
        runId: 'pixelmill/catalog',
        name: 'catalog',
        state: 'running',
        emulated: false,
        itemCount: 1_000,
        shardCount: 2,
        finished: {
          counts: zeroCounts(),
          creditsSpent: 0,
          apiCalls: { submit: 0, lookup: 0, get: 0 },
          images: 0,
        },
        runningShards: [],
        requestsPerSecond: 0,
        rateCaps: {},
        submission: 'batch-file',
      },
      counts: { ...zeroCounts(), processing: 500, completed: 500 },
      creditsSpent: 8.5,
      images: 500,
      apiCalls: { submit: 6, lookup: 20, get: 3 },
      batches: addBatchTotals(shardA, shardB),
    };
    const line = renderLine({ progress, rates: { requestsPerSecond: 0.4, requestsWindowS: 30 }, nowMs: NOW });
    expect(line).toContain('batches 1 in flight, 2 completed, 1 expired · requests 480 waiting');
    expect(line).toContain('next poll in 12 s');
    expect(line).not.toMatch(/requests [\d.]+\/s|rate |discovering/);

    const plan = { submission: 'batch-file' as const, rateCaps: {}, requestsPerSecond: 0 };
    const details = runDetails({
      state: 'running',
      itemCount: 1_000,
      counts: progress.counts,
      credits: 8.5,
      shardCount: 2,
      started: 2,
      running: 1,
      tasksRejected: 0,
      endedByDeadline: 0,
      rate: pacingOf(plan, 'pixelmill-governor', progress.batches),
    });
    expect(details).toContain('Batches: 1 in flight, 2 completed, 1 expired; requests 480 waiting');
    expect(details).not.toContain('API rate');
    // A run of tasks keeps its rate.
    expect(pacingOf({ rateCaps: {}, requestsPerSecond: 0 }, 'gov', undefined)).toEqual({ governor: 'gov' });
  });

  it("keeps the finished shards' batches in the run's totals, and the running ones' as told", () => {
    const totals = new RunTotals(undefined);
    const finished = { ...zeroBatchTotals(), completed: 1, expired: 1, enqueuedLimit: 5_000 };
    totals.shardFinished(
      0,
      {
        shard: 0,
        counts: zeroCounts(),
        creditsSpent: 0,
        apiCalls: { submit: 0, lookup: 0, get: 0 },
        images: 0,
        batches: finished,
      },
      undefined,
    );
    totals.told({
      shard: 1,
      counts: zeroCounts(),
      creditsSpent: 0,
      apiCalls: { submit: 0, lookup: 0, get: 0 },
      images: 0,
      paused: false,
      cancelled: false,
      batches: shardA,
    });
    expect(totals.snapshot().batches).toMatchObject({ completed: 1, expired: 1, inFlight: 0 });
    expect(totals.sofar().batches).toMatchObject({
      completed: 1,
      expired: 1,
      inFlight: 1,
      enqueuedImages: 1_000,
    });
    expect(RunTotals.restore(totals.state()).snapshot().batches).toMatchObject({ completed: 1, expired: 1 });
  });
});
