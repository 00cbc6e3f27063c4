// The run's current details in the Temporal UI: one paragraph of where it stands, from its totals.
// Pure text, unit-tested without a server (test/run-details.test.ts).
import { describeOutcome } from '../common/item-counts.js';
import type { CarryOverTotals, ItemCounts, RunState } from '../common/types.js';
import { plural } from '../common/words.js';

export interface RunDetailsView {
  state: RunState;
  itemCount: number;
  counts: ItemCounts;
  credits: number;
  shardCount: number;
  started: number;
  running: number;
  /** Tasks whose images the checks rejected (their items generated again). */
  tasksRejected: number;
  carryOver?: CarryOverTotals | undefined;
  deadlineAt?: number | undefined;
  endedByDeadline: number;
  /** How the API rate is set: a fixed number, or the governor that discovers it. */
  rate: { fixed: number } | { governor: string };
}

export function runDetails(view: RunDetailsView): string {
  const { counts, credits, state } = view;
  const progress =
    state === 'finished'
      ? `Finished: ${describeOutcome(counts, view.itemCount, credits)}.`
      : `${view.started - view.running} of ${plural(view.shardCount, 'shard')} finished, ${view.running} running: ` +
        `${counts.completed} of ${plural(view.itemCount, 'item')} completed, ${counts.failed} failed so far; ${plural(credits, 'credit')}.`;
  return progress + reuse(view.carryOver) + rejected(view.tasksRejected) + deadline(view) + rate(view.rate);
}

function reuse(carriedOver: CarryOverTotals | undefined): string {
  if (!carriedOver) return '';
  const { reused, restored, moved, regenerated } = carriedOver;
  return ` Carried over from the catalog: ${reused} of ${plural(carriedOver.items, 'item')} (${restored} fetched again, ${moved} copied to new paths, ${regenerated} generated after all).`;
}

function rejected(tasks: number): string {
  return tasks
    ? ` The checks rejected the images of ${plural(tasks, 'task')}, whose items were generated again.`
    : '';
}

function deadline({ deadlineAt, state, endedByDeadline }: RunDetailsView): string {
  if (deadlineAt === undefined) return '';
  return state === 'finished' && endedByDeadline > 0
    ? ` The deadline ended it with ${plural(endedByDeadline, 'item')} unfinished.`
    : ` Deadline ${new Date(deadlineAt).toISOString()}.`;
}

function rate(how: RunDetailsView['rate']): string {
  return 'fixed' in how
    ? ` API rate: ${how.fixed}/s (fixed).`
    : ` API rate: discovered by ${how.governor}, whose details show the rates in force.`;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
