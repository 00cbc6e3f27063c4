// Where a shard's submits ask a provider for slots (BFL without webhooks), without a server: the
// concurrency its refusals show, the slots it expects free, and when a slice goes.
import { describe, expect, it } from 'vitest';
import type { ShardLimits } from '../common/types.js';
import {
  agesWeighedBy,
  concurrencySeen,
  expectedRunning,
  nextFreeAtMs,
  SEEN_GROWTH,
  seenAtRefusal,
} from '../workflows/asked-slots.js';
import { handedCap, startCap } from '../workflows/concurrency-cap.js';
import { ShardIndices } from '../workflows/item-phases.js';
import type { ShardContext } from '../workflows/shard-context.js';
import { ShardItems } from '../workflows/shard-items.js';
import { ShardSlots } from '../workflows/shard-slots.js';
import { freshShardState } from '../workflows/tracking.js';

/** Generation times spread evenly over 1 to 2 s. */
const SAMPLES = Array.from({ length: 20 }, (_, k) => 1_000 + 50 * k);
const SORTED = agesWeighedBy(SAMPLES);

describe('the slots a shard expects free where its submits ask for them', () => {
  it('counts each task not known finished with the share of generations longer than its age', () => {
    const held = { heldSinceMs: [0, 0, 1_025, 2_000], submitting: 1 };
    // At 2,500: ages 2,500 (past every sample), 2,500, 1,475 (half the samples longer), 500 (all).
    expect(expectedRunning(held, 2_500, SORTED)).toBeCloseTo(1 + 0 + 0 + 0.5 + 1);
    // Too few generation times to weigh by: every task runs.
    expect(agesWeighedBy(SAMPLES.slice(0, 5))).toBeUndefined();
    expect(expectedRunning(held, 2_500, undefined)).toBe(5);
  });

  it('sets the concurrency seen at the first refusal, takes one off at the next, and grows it with tasks finished', () => {
    const asking = startCap(24, 0, true);
    expect(concurrencySeen(asking, 0)).toBeUndefined();
    const seen = seenAtRefusal(asking, 21.5, 10);
    expect(concurrencySeen(seen, 10)).toBe(21.5);
    // SEEN_GROWTH a generation's worth of finished tasks (22).
    expect(concurrencySeen(seen, 10 + 22)).toBe(21.5 + SEEN_GROWTH);
    expect(concurrencySeen(seen, 10 + 5)).toBe(21.5 + Math.floor((5 * SEEN_GROWTH) / 22));
    // One off at a later refusal, down to what the shard expected to run at most.
    expect(concurrencySeen(seenAtRefusal(seen, 19.5, 10), 10)).toBe(20.5);
    expect(concurrencySeen(seenAtRefusal(seen, 21, 10), 10)).toBe(21);
    // Never under one, nor for a shard that keeps a cap.
    expect(concurrencySeen(seenAtRefusal(asking, 0, 0), 0)).toBe(1);
    expect(concurrencySeen(handedCap(24, 0), 0)).toBeUndefined();
  });

  it('expects the next slot free when the ages of the tasks held say one has finished', () => {
    const held = { heldSinceMs: [0, 500, 1_000], submitting: 0 };
    // Three running at 900; two expected at 1,700 (a quarter of the samples longer than the oldest's
    // age, three quarters than the next's).
    expect(nextFreeAtMs(3, held, 900, SORTED)).toBeGreaterThan(1_650);
    expect(nextFreeAtMs(3, held, 900, SORTED)).toBeLessThanOrEqual(1_705);
    expect(nextFreeAtMs(4, held, 900, SORTED)).toBe(900);
    // Nothing to go by, or only submits on their way: no time frees a slot.
    expect(nextFreeAtMs(3, held, 900, undefined)).toBe(Number.POSITIVE_INFINITY);
    expect(nextFreeAtMs(3, { heldSinceMs: [], submitting: 3 }, 900, SORTED)).toBe(Number.POSITIVE_INFINITY);
  });
});

function askingShard(handed?: { cap: number; heldSinceMs: number[]; runSamples?: number[] }): {
  ctx: ShardContext;
  slots: ShardSlots;
} {
  const limits: ShardLimits = {
    maxInFlight: 100,
    retry: { maxAttempts: 1, on: [] },
    pollMinMs: 500,
    pollMaxMs: 5_000,
    concurrency: { start: 24, refused: true, ...(handed ? { handed } : {}) },
    ...(handed?.runSamples ? { generationMs: handed.runSamples } : {}),
  };
  const s = freshShardState(100, false, false, 500);
  if (handed) s.concurrency = handedCap(handed.cap, 0, true);
  else {
    s.generationMs = SAMPLES;
    s.concurrency = startCap(24, 0, true);
  }
  const items = new ShardItems(s, new ShardIndices({ offset: 0 }), limits);
  const ctx = { s, items, limits } as unknown as ShardContext;
  return { ctx, slots: new ShardSlots(ctx) };
}

function submitAt(ctx: ShardContext, count: number, atMs: number): void {
  for (let k = 0; k < count; k++) {
    const { index } = ctx.items.startSubmit();
    ctx.items.submitted(index, `t${index}`, atMs);
  }
}

describe("a shard whose submits ask for slots, after the provider's refusal", () => {
  it('holds the slice until a slot should have freed, then sends as many as should be free', () => {
    const { ctx, slots } = askingShard();
    const now = Date.now();
    expect(slots.free()).toBe(true);
    // Twelve tasks 1.5 s old (11 of 20 samples at most that) and twelve just sent: the provider
    // refuses the 25th.
    submitAt(ctx, 12, now - 1_500);
    submitAt(ctx, 12, now);
    slots.answered(true, [], { sentAtMs: now, nowMs: now });
    expect(concurrencySeen(ctx.s.concurrency!, 0)).toBeCloseTo(12 * 0.45 + 12);
    expect(slots.free()).toBe(false);
    const wakeAtMs = slots.wakeAtMs();
    expect(wakeAtMs - now).toBeGreaterThan(0);
    expect(wakeAtMs - now).toBeLessThan(200);
    // A poll finding an old task finished frees no slot it does not expect free already.
    const old = ctx.items.submittedTasks().indices[0]!;
    ctx.items.lookedUp([old], ['completed']);
    expect(ctx.items.doneAtProvider()).toBe(1);
    expect(slots.free()).toBe(false);
  });

  it('sends a slice of what should be free once its tasks have aged, no refusal needed to stop it', () => {
    const { ctx, slots } = askingShard();
    const thenMs = Date.now() - 1_500;
    submitAt(ctx, 20, thenMs);
    slots.answered(true, [], { sentAtMs: thenMs, nowMs: thenMs });
    expect(concurrencySeen(ctx.s.concurrency!, 0)).toBe(20);
    // 1.5 s later, 9 of the 20 expected running (11 of 20 samples at most that): 11 go, each
    // counting as running from its send.
    let sent = 0;
    while (slots.free() && sent < 50) {
      ctx.items.startSubmit();
      sent++;
    }
    expect(sent).toBe(11);
  });

  it("counts its predecessor's tasks by their ages, by the run's generation times until it has its own", () => {
    const now = Date.now();
    const young = Array.from({ length: 24 }, () => now - 500);
    const aged = Array.from({ length: 24 }, () => now - 1_500);
    // The run's times: the 24 tasks half a second old all run (a probe of one only), 1.5 s old
    // about half.
    const full = askingShard({ cap: 24, heldSinceMs: young, runSamples: SAMPLES });
    expect(full.slots.free()).toBe(true);
    full.ctx.items.startSubmit();
    expect(full.slots.free()).toBe(false);
    const { ctx, slots } = askingShard({ cap: 24, heldSinceMs: aged, runSamples: SAMPLES });
    expect(slots.free()).toBe(true);
    expect(slots.wakeAtMs()).toBeLessThanOrEqual(Date.now());
    ctx.items.startSubmit();
    expect(slots.free()).toBe(true);
    // No times at all: they are taken as finished, and the shard asks.
    expect(askingShard({ cap: 24, heldSinceMs: young }).slots.free()).toBe(true);
  });

  it('probes with one submit a slot interval after its last ask, when the ages say none is free', () => {
    const { ctx, slots } = askingShard();
    // Refused 200 ms ago with 24 tasks just sent: the hold (a median generation over 24) is over,
    // and the ages say all 24 still run.
    const thenMs = Date.now() - 200;
    submitAt(ctx, 24, thenMs);
    slots.answered(true, [], { sentAtMs: thenMs, nowMs: thenMs });
    expect(slots.free()).toBe(true);
    const { index } = ctx.items.startSubmit();
    // One at a time: not while it is on its way, nor until a slot's interval after it went.
    expect(slots.free()).toBe(false);
    slots.sent();
    ctx.items.submitted(index, `t${index}`, Date.now());
    expect(slots.free()).toBe(false);
    const waitMs = slots.wakeAtMs() - Date.now();
    expect(waitMs).toBeGreaterThan(30);
    expect(waitMs).toBeLessThanOrEqual(Math.ceil(1_475 / 24) + 1);
  });
});
