// Where a worker counts items, images, bytes and check failures: the outcome lines its activities
// append to the run state (storeResults, collectResults, recordOutcomes, carryOver, the batch
// and held-call collectors alike), which are what the report is made of. One place, no activity
// touched, and the same words as the report.
//
// An activity retried on this worker appends again under the same sequence (activities/context.ts,
// appendSequence), its earlier lines with its new ones: only lines not counted under that sequence
// yet are counted. A retry on another worker counts there again (its memory is not this one's).
import type { PlanRef } from '../common/types.js';
import type { OutcomeLine, RunStateStore } from '../runstate/index.js';
import type { WorkerMetrics } from './worker-metrics.js';

/** Appends remembered, oldest dropped first: far more than the activities a worker runs at once. */
const APPENDS_REMEMBERED = 2_000;

/** `store`, its appended outcome lines counted on `metrics` once they are written. */
export function countingOutcomes(store: RunStateStore, metrics: WorkerMetrics): RunStateStore {
  const counted = new Map<string, Map<number, string>>();

  /** The lines of this append not counted yet under its sequence (all of them without one). */
  function notCounted(ref: PlanRef, shard: number, lines: readonly OutcomeLine[], sequence?: string) {
    if (sequence === undefined) return lines;
    const key = `${ref.stateDir}|${ref.planHash}|${shard}|${sequence}`;
    const seen = counted.get(key) ?? new Map<number, string>();
    if (!counted.has(key)) {
      counted.set(key, seen);
      if (counted.size > APPENDS_REMEMBERED) counted.delete(counted.keys().next().value!);
    }
    const fresh = lines.filter((line) => seen.get(line.index) !== line.status);
    for (const line of fresh) seen.set(line.index, line.status);
    return fresh;
  }

  async function appendOutcomes(
    ref: PlanRef,
    shard: number,
    lines: readonly OutcomeLine[],
    sequence?: string,
  ): Promise<void> {
    await store.appendOutcomes(ref, shard, lines, sequence);
    try {
      const fresh = notCounted(ref, shard, lines, sequence);
      if (fresh.length > 0) metrics.outcomes((await store.readPlanMeta(ref)).provider, fresh);
    } catch {
      // The lines are written: a plan meta that cannot be read now costs a metric, not the activity.
    }
  }

  // Every other method is the store's own, bound to it (stores keep private fields).
  return new Proxy(store, {
    get(target, property) {
      if (property === 'appendOutcomes') return appendOutcomes;
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
