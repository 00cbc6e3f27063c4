// When a shard asks a one-task-per-call provider about each task (workflows/single-checks.ts).
import { describe, expect, it } from 'vitest';
import {
  checkPlan,
  dueChecks,
  FIRST_CHECK_QUANTILE,
  nextCheckAt,
  quantile,
  type CheckedTask,
} from '../workflows/single-checks.js';

const bounds = { minMs: 1_000, maxMs: 10_000, webhooks: false };
const task = (index: number, submittedAtMs: number, checks = 0, lastCheckAtMs?: number): CheckedTask => ({
  index,
  submittedAtMs,
  checks,
  lastCheckAtMs,
});

describe('single-task checks', () => {
  it('without samples, asks from a quarter of the shortest interval up, doubling', () => {
    const plan = checkPlan([], bounds);
    expect(plan.firstMs).toBe(250);
    expect([1, 2, 3, 4, 5, 6].map((k) => plan.againMs(k))).toEqual([250, 500, 1_000, 2_000, 4_000, 8_000]);
    expect(plan.againMs(7)).toBe(10_000);
  });

  it('asks first when most tasks have finished, then at a spacing set by the spread', () => {
    // Generation times 5.0 to 6.9 s.
    const samples = Array.from({ length: 20 }, (_, i) => 5_000 + i * 100);
    const plan = checkPlan(samples, bounds);
    const sorted = [...samples].sort((a, b) => a - b);
    expect(plan.firstMs).toBe(quantile(sorted, FIRST_CHECK_QUANTILE));
    expect(plan.firstMs).toBe(6_300);
    // The 95th percentile is 6.8 s: half of 0.5 s, the spread above the first call.
    expect(plan.againMs(1)).toBe(250);
    expect(plan.againMs(2)).toBe(500);
  });

  it('with webhooks, asks once well past the slowest delivery, then twice as long each time up to the longest interval', () => {
    const samples = [4_000, 5_000, 6_000];
    const plan = checkPlan(samples, { ...bounds, webhooks: true });
    // Twice the slowest delivery, within the longest interval.
    expect(plan.firstMs).toBe(10_000);
    const wide = checkPlan(samples, { minMs: 1_000, maxMs: 60_000, webhooks: true });
    expect(wide.firstMs).toBe(2 * 6_000 + 1_000);
    expect([1, 2, 3, 4].map((checks) => wide.againMs(checks))).toEqual([13_000, 26_000, 52_000, 60_000]);
    expect(plan.againMs(3)).toBe(10_000);
    expect(checkPlan([], { ...bounds, webhooks: true }).firstMs).toBe(10_000);
  });

  it('times each task from its submit, then from its last call', () => {
    const plan = { firstMs: 5_000, againMs: (checks: number) => checks * 1_000 };
    expect(nextCheckAt(task(0, 100_000), plan)).toBe(105_000);
    expect(nextCheckAt(task(0, 100_000, 2, 107_000), plan)).toBe(109_000);
  });

  it('takes the tasks due now and those due within the window after them, at most `max`', () => {
    const plan = { firstMs: 10_000, againMs: () => 1_000 };
    const tasks = [task(0, 0), task(1, 500), task(2, 900), task(3, 5_000)];
    // At 10 s task 0 is due; 1 (10.5 s) and 2 (10.9 s) fall in the window of 1 s; 3 at 15 s.
    expect(dueChecks(tasks, 10_000, plan, 50)).toEqual({ due: [0, 1, 2], nextAtMs: 15_000 });
    expect(dueChecks(tasks, 10_000, plan, 2)).toEqual({ due: [0, 1], nextAtMs: 10_900 });
    // Nothing due yet: none asked, and when the first is.
    expect(dueChecks(tasks, 9_000, plan, 50)).toEqual({ due: [], nextAtMs: 10_000 });
    expect(dueChecks([], 9_000, plan, 50)).toEqual({ due: [], nextAtMs: Number.POSITIVE_INFINITY });
  });
});
