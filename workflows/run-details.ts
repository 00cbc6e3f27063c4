// The run's current details in the Temporal UI: one paragraph of where it stands, from its totals.
// Pure text, unit-tested without a server (test/run-details.test.ts).
import { describeOutcome } from '../common/item-counts.js';
import { describeBatches, zeroBatchTotals } from '../common/batch-totals.js';
import type { BatchTotals } from '../common/batch-types.js';
import type { CarryOverTotals, ItemCounts, PreparedRun, RunState } from '../common/types.js';
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
  /**
   * How the API rate is set: a fixed number, or the governor that discovers it; a batch run's
   * batches instead (its few calls skip the rate gate).
   */
  rate: { fixed: number } | { governor: string } | { batches: BatchTotals };
}

/** How a run's calls are paced, for its details: its batches in batch mode, else its rate. */
export function pacingOf(
  plan: Pick<PreparedRun, 'submission' | 'rateCaps' | 'requestsPerSecond'>,
  governor: string,
  batches: BatchTotals | undefined,
): RunDetailsView['rate'] {
  if (plan.submission === 'batch-file') return { batches: batches ?? zeroBatchTotals() };
  return plan.rateCaps === undefined ? { fixed: plan.requestsPerSecond } : { governor };
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
  if ('batches' in how) return ` ${describeBatches(how.batches)}`;
  return 'fixed' in how
    ? ` API rate: ${how.fixed}/s (fixed).`
    : ` API rate: discovered by ${how.governor}, whose details show the rates in force.`;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
