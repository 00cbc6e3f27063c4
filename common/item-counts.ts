// Counts of a run's items by where they are: the zero every tally starts from, shared by the
// workflows that count, the report that totals and the CLI that shows them.
import type { ItemCounts } from './types.js';

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
