// Counts of a run's items by where they are, shared by the workflows that count, the report that
// totals and the CLI that shows them: the zero every tally starts from, sums and descriptions.
import type { ApiCallCounts, ItemCounts } from './types.js';
import { plural } from './words.js';

/** No API calls yet: where a shard's, a run's or a report's call counts start. */
export function zeroApiCalls(): ApiCallCounts {
  return { submit: 0, lookup: 0, get: 0 };
}

export function zeroCounts(): ItemCounts {
  return {
    queued: 0,
    submitted: 0,
    processing: 0,
    storing: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    expired: 0,
    skipped: 0,
  };
}

/**
 * Counts as any version recorded them. Before one vocabulary served the display, the report and
 * the summary, the final state was `stored` and `completed` meant what is now `storing`; such
 * counts live on in the histories of older runs and shards.
 */
export function normalizeCounts(counts: ItemCounts | LegacyItemCounts): ItemCounts {
  if (!('stored' in counts)) return counts;
  const { stored, completed, ...rest } = counts;
  return { ...zeroCounts(), ...rest, storing: completed, completed: stored };
}

type LegacyItemCounts = Omit<ItemCounts, 'storing'> & { stored: number };

/** `38 of 41 items completed, 3 failed; 160 credits`: completed, then the other final states that are not 0. */
export function describeOutcome(counts: ItemCounts, itemCount: number, credits: number): string {
  const rest = (['failed', 'expired', 'cancelled', 'skipped'] as const)
    .filter((key) => counts[key] > 0)
    .map((key) => `, ${counts[key]} ${key}`)
    .join('');
  return `${counts.completed} of ${plural(itemCount, 'item')} completed${rest}; ${plural(credits, 'credit')}`;
}

/** Adds `from` into `into`, key by key; a key that `from` lacks (an older version's) counts as 0. */
export function addTotals<T extends object>(into: T, from: T): void {
  for (const key of Object.keys(into) as (keyof T)[]) (into[key] as number) += (from[key] as number) ?? 0;
}

/** Items in a final state. */
export function finishedItems(counts: ItemCounts): number {
  return counts.completed + counts.failed + counts.cancelled + counts.expired + counts.skipped;
}
