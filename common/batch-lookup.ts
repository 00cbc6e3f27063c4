// What the API's batch lookup promises, as far as workflow code needs it (plain data: the
// workflow bundle imports it, the API client's schemas too).

/** Task ids one batch lookup takes at most. */
export const MAX_BATCH_IDS = 500;

/** Outcomes a batch lookup may give besides task states. They are not task states. */
export const BATCH_LOOKUP_OUTCOMES = ['invalid_id', 'expired', 'not_found'] as const;
export type BatchLookupOutcome = (typeof BATCH_LOOKUP_OUTCOMES)[number];

export function isBatchLookupOutcome(status: string): status is BatchLookupOutcome {
  return (BATCH_LOOKUP_OUTCOMES as readonly string[]).includes(status);
}
