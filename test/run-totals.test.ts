// The run's totals as its shards tell them, and what it tells each shard it starts: without a server.
import { describe, expect, it } from 'vitest';
import type { PreparedRun, ShardResult } from '../common/types.js';
import {
  carryOverRanges,
  concurrentShards,
  generationShards,
  regenerationShards,
  shardInput,
  UNCAPPED_SUBMIT_RATE,
} from '../workflows/run-shards.js';
import { RunTotals } from '../workflows/run-totals.js';
import { zeroCounts } from '../common/item-counts.js';

const result = (completed: number, creditsSpent: number, more: Partial<ShardResult> = {}): ShardResult => ({
  shard: 0,
  counts: { ...zeroCounts(), completed },
  creditsSpent,
  apiCalls: { submit: completed, lookup: 1, get: completed },
  images: completed,
  ...more,
});

describe("a run's totals", () => {
  it('hand out the budget shard by shard and take back what a shard did not spend', () => {
    const totals = new RunTotals(100);
    expect(totals.allocate(60)).toBe(60);
    expect(totals.allocate(60)).toBe(40); // only what is left
    expect(totals.allocate(60)).toBe(0);
    totals.shardFinished(0, result(5, 20), 60);
    expect(totals.allocate(undefined)).toBe(40); // the 40 the first shard did not spend
    expect(new RunTotals(undefined).allocate(10)).toBeUndefined();
  });

  it("count the running shards' last word until their result replaces it", () => {
    const totals = new RunTotals(undefined);
    totals.told({
      shard: 1,
      counts: { ...zeroCounts(), completed: 3 },
      creditsSpent: 3,
      apiCalls: { submit: 3, lookup: 1, get: 3 },
      images: 3,
      tasksGivenUp: 0,
      paused: false,
      cancelled: false,
    });
    totals.shardFinished(0, result(10, 10, { pollMs: 2500, endedByDeadline: 2 }), undefined);
    expect(totals.sofar()).toMatchObject({ counts: { completed: 13 }, credits: 13 });
    totals.shardFinished(1, result(4, 4), undefined);
    expect(totals.sofar()).toMatchObject({ counts: { completed: 14 }, credits: 14 });
    expect(totals.snapshot()).toMatchObject({ images: 14, apiCalls: { submit: 14, lookup: 2, get: 14 } });
    expect(totals.learnedPollMs).toBe(2500);
    expect(totals.endedByDeadline).toBe(2);
  });
});

describe('starting a shard', () => {
  const plan = {
    plan: { stateDir: '/s', planFile: 'p', hash: 'h' },
    name: 'cat',
    itemCount: 1_200,
    maxInFlight: 1_000,
    requestsPerSecond: 10,
    retry: { maxAttempts: 1, on: [] },
  } as unknown as PreparedRun;
  const start = {
    input: { plan: { stateDir: '/s', planHash: 'h' }, manifestHash: 'h', emulated: false } as never,
    plan,
    runId: 'run-1',
    fairnessKey: 'exec-1',
    shard: generationShards(plan)[2]!,
    parallel: concurrentShards(3, plan),
    maxInFlight: 200,
    allowance: undefined,
    deadlineAt: undefined,
    learnedPollMs: 3_000,
    paused: false,
    cancelled: false,
  };

  it("gives the last shard the plan's remaining items, its share and the pace learned so far", () => {
    expect(start.parallel).toBe(3);
    const input = shardInput(start);
    expect(input.shard).toEqual({ index: 2, offset: 1_000, count: 200 });
    expect(input.limits).toMatchObject({ maxInFlight: 200, handOff: true, firstPollMs: 3_000 });
    expect(input.limits.maxPendingSubmits).toBe(5); // 1.5 s of 10/s over three shards
    expect(input.governed).toBeUndefined();
  });

  it("routes a discovered rate's calls to the governed queues under the run's fairness key", () => {
    const input = shardInput({ ...start, plan: { ...plan, rateCaps: {} } });
    expect(input.governed).toEqual({ fairnessKey: 'exec-1' });
    expect(input.limits.maxPendingSubmits).toBe(Math.ceil((1.5 * UNCAPPED_SUBMIT_RATE) / 3));
  });

  it("hands a provider's refused concurrency on: the last hand-off's cap and the tasks still holding slots", () => {
    const totals = new RunTotals(undefined);
    totals.learn({ generationMs: [900, 1100], slots: { cap: 22, heldSinceMs: [5_000, 5_400] } });
    const refusing = { ...plan, concurrency: { documented: 24, refused: true } };
    const input = shardInput({ ...start, plan: refusing, parallel: 1, learnedSlots: totals.learnedSlots });
    expect(input.limits.concurrency).toEqual({
      start: 24,
      refused: true,
      handed: { cap: 22, heldSinceMs: [5_000, 5_400] },
    });
    expect(totals.learnedGenerationMs).toEqual([900, 1100]);
    // A queuing provider's shards share its queue instead; nothing handed.
    const queuing = shardInput({
      ...start,
      plan: { ...plan, concurrency: { documented: 40 } },
      learnedSlots: totals.learnedSlots,
    });
    expect(queuing.limits.concurrency).toEqual({ start: 13, sharing: 3 });
  });

  it("shards an incremental run's items to generate, carries the rest in ranges numbered after them", () => {
    const incremental = { itemCount: 1_700, generateCount: 600 };
    expect(generationShards(incremental)).toEqual([
      { index: 0, offset: 0, count: 500 },
      { index: 1, offset: 500, count: 100 },
    ]);
    expect(carryOverRanges(incremental)).toEqual([
      { offset: 600, count: 500, shard: 2 },
      { offset: 1_100, count: 500, shard: 3 },
      { offset: 1_600, count: 100, shard: 4 },
    ]);
    expect(carryOverRanges({ itemCount: 1_200 })).toEqual([]);
  });

  it('gives carried items that must be generated after all shards of their own, in plan order', () => {
    const indices = Array.from({ length: 501 }, (_, k) => 2_000 - k);
    const shards = regenerationShards(indices, 5);
    expect(shards.map(({ index, offset, count }) => ({ index, offset, count }))).toEqual([
      { index: 5, offset: 1_500, count: 500 },
      { index: 6, offset: 2_000, count: 1 },
    ]);
    expect(shards[0]!.indices).toEqual(Array.from({ length: 500 }, (_, k) => 1_500 + k));
    expect(regenerationShards([], 5)).toEqual([]);
  });
});
