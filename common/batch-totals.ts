// A batch run's batches in numbers and in words (BatchTotals): added up over shards, and said the
// same way by the terminal, `status`, summary.json and the Temporal UI. Pure: workflows use it too.
import type { BatchTotals } from './batch-types.js';

export function zeroBatchTotals(): BatchTotals {
  return {
    inFlight: 0,
    completed: 0,
    expired: 0,
    failed: 0,
    cancelled: 0,
    requests: { waiting: 0, completed: 0, failed: 0 },
    enqueuedImages: 0,
  };
}

/** `a` and `b` together (a new object): counts added, the limit kept, the soonest next poll. */
export function addBatchTotals(a: BatchTotals | undefined, b: BatchTotals | undefined): BatchTotals {
  const sum = zeroBatchTotals();
  for (const totals of [a, b]) {
    if (!totals) continue;
    sum.inFlight += totals.inFlight;
    sum.completed += totals.completed;
    sum.expired += totals.expired;
    sum.failed += totals.failed;
    sum.cancelled += totals.cancelled;
    sum.requests.waiting += totals.requests.waiting;
    sum.requests.completed += totals.requests.completed;
    sum.requests.failed += totals.requests.failed;
    sum.enqueuedImages += totals.enqueuedImages;
    // Every shard tells the run's one limit.
    if (totals.enqueuedLimit !== undefined)
      sum.enqueuedLimit = Math.max(sum.enqueuedLimit ?? 0, totals.enqueuedLimit);
    if (
      totals.nextPollAt !== undefined &&
      (sum.nextPollAt === undefined || totals.nextPollAt < sum.nextPollAt)
    )
      sum.nextPollAt = totals.nextPollAt;
  }
  return sum;
}

/** `1 in flight, 2 completed, 1 expired`: ended batches named only when there are some (completed always). */
function batchesPart(t: BatchTotals): string {
  const ended = (['expired', 'failed', 'cancelled'] as const)
    .filter((key) => t[key] > 0)
    .map((key) => `${t[key]} ${key}`);
  return [`${t.inFlight} in flight`, `${t.completed} completed`, ...ended].join(', ');
}

/**
 * The batches as parts of a line: `batches 1 in flight, 2 completed, 1 expired`, `requests 480
 * waiting, 15 completed, 5 failed` (of the batches in flight), `enqueued 500 of 5000 images`, `next
 * poll in 12 s` (with `nowMs`; else at its time, `next poll 12:03:04Z`).
 */
export function batchParts(t: BatchTotals, nowMs?: number): string[] {
  const parts = [`batches ${batchesPart(t)}`];
  if (t.inFlight > 0) {
    const { waiting, completed, failed } = t.requests;
    parts.push(`requests ${waiting} waiting, ${completed} completed, ${failed} failed`);
  }
  if (t.inFlight > 0 || t.enqueuedLimit !== undefined)
    parts.push(
      `enqueued ${t.enqueuedImages}${t.enqueuedLimit !== undefined ? ` of ${t.enqueuedLimit}` : ''} ${t.enqueuedImages === 1 && t.enqueuedLimit === undefined ? 'image' : 'images'}`,
    );
  if (t.nextPollAt !== undefined && t.inFlight > 0) {
    const at = Date.parse(t.nextPollAt);
    parts.push(
      nowMs === undefined
        ? `next poll ${new Date(at).toISOString().slice(11, 19)}Z`
        : `next poll in ${Math.max(0, Math.ceil((at - nowMs) / 1000))} s`,
    );
  }
  return parts;
}

/** The batches in one sentence, for the Temporal UI's details: `Batches: 1 in flight, ...; requests ...`. */
export function describeBatches(t: BatchTotals): string {
  const [first, ...rest] = batchParts(t);
  return `${first!.replace(/^batches/, 'Batches:')}${rest.map((part) => `; ${part}`).join('')}.`;
}
