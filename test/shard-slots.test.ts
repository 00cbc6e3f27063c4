// A shard's slots at a provider that refuses over its concurrency (BFL), without a server: what a
// refusal does to the cap, and how long it holds the lane.
import { describe, expect, it } from 'vitest';
import type { ShardLimits } from '../common/types.js';
import { capNow, handedCap } from '../workflows/concurrency-cap.js';
import { ShardIndices } from '../workflows/item-phases.js';
import type { ShardContext } from '../workflows/shard-context.js';
import { ShardItems } from '../workflows/shard-items.js';
import { ShardSlots } from '../workflows/shard-slots.js';
import { freshShardState } from '../workflows/tracking.js';

const TYPICAL_MS = 1_000;

/** A shard of 100 items told of its tasks' ends by webhooks, having seen generations of about a second. */
function shardWith(concurrency: ShardLimits['concurrency']): { ctx: ShardContext; slots: ShardSlots } {
  const limits: ShardLimits = {
    maxInFlight: 100,
    retry: { maxAttempts: 1, on: [] },
    pollMinMs: 500,
    pollMaxMs: 5_000,
    webhookBaseUrl: 'http://127.0.0.1:1/webhooks',
    concurrency,
  };
  const s = freshShardState(100, false, false, 500);
  s.generationMs = Array.from({ length: 20 }, (_, k) => TYPICAL_MS - 100 + 10 * k);
  const items = new ShardItems(s, new ShardIndices({ offset: 0 }), limits);
  const ctx = { s, items, limits } as unknown as ShardContext;
  return { ctx, slots: new ShardSlots(ctx) };
}

function submit(ctx: ShardContext, count: number, nowMs: number): void {
  for (let k = 0; k < count; k++) {
    const { index } = ctx.items.startSubmit();
    ctx.items.submitted(index, `t${index}`, nowMs);
  }
}

describe("a shard's slots at a provider that refuses over its concurrency", () => {
  it("a refusal with its own tasks only takes one off the cap and holds until a typical generation's end", () => {
    const { ctx, slots } = shardWith({ start: 24, refused: true });
    ctx.s.concurrency = handedCap(24, 0);
    const now = Date.now();
    submit(ctx, 24, now);
    slots.answered(true, [], { sentAtMs: now, nowMs: now });
    expect(capNow(ctx.s.concurrency, 0)).toBe(23);
    expect(slots.free()).toBe(false);
    expect(slots.wakeAtMs() - now).toBeGreaterThanOrEqual(TYPICAL_MS / 2);
  });

  it("a refusal while its predecessor's tasks still count keeps the cap, and asks again soon", () => {
    const now = Date.now();
    // The predecessor's 24 tasks, a tenth of a generation old: their webhooks go to it, not here.
    const heldSinceMs = Array.from({ length: 24 }, () => now - 100);
    const { ctx, slots } = shardWith({ start: 24, refused: true, handed: { cap: 24, heldSinceMs } });
    ctx.s.concurrency = handedCap(24, 0);
    submit(ctx, 2, now);
    slots.answered(true, [], { sentAtMs: now, nowMs: now });
    expect(capNow(ctx.s.concurrency, 0)).toBe(24);
    // Twice the time in which one of the 26 tasks it cannot hear of should end, not a generation.
    expect(slots.wakeAtMs() - now).toBeLessThanOrEqual(Math.ceil((2 * TYPICAL_MS) / 26) + 1);
  });
});
