// A shard's credits: what the API charged, what its tasks at the API may still cost, and whether
// the next submit stays within the shard's allowance. Read from the carried state; pure.
import type { ShardCarriedState } from '../common/types.js';
import { isFinal, Phase } from './tracking.js';

/**
 * What the API charged: a task's credits_cost, counted from the moment its finished task is
 * read, or from its submit where the provider announces the cost there (BFL), whether or not its
 * images are stored yet (failed tasks are refunded, so they count 0).
 */
export function creditsSpent(state: ShardCarriedState): number {
  return state.credits.reduce(
    (sum, credits) => sum + (credits ?? 0),
    (state.checkRejectedCredits ?? 0) + (state.lostCredits ?? 0),
  );
}

/** Estimated credits of the tasks at the API whose charge is not read yet; undefined without a budget. */
export function creditsReserved(state: ShardCarriedState): number | undefined {
  const chargeUnread = (i: number): boolean => {
    const phase = state.phase[i];
    // A cost the provider announced at submit is spent already, not reserved.
    return (
      phase === Phase.submitting ||
      ((phase === Phase.submitted || phase === Phase.storing) && !state.credits[i])
    );
  };
  return state.estimates?.reduce((sum, estimate, i) => sum + (chargeUnread(i) ? estimate : 0), 0);
}

/** Whether submitting the next queued item would commit more than `allowance` credits. */
export function nextWouldExceed(state: ShardCarriedState, allowance: number): boolean {
  const { phase, credits, estimates } = state;
  const committed = phase.reduce(
    (sum, p, i) => {
      if (isFinal(p)) return sum + (credits[i] ?? 0);
      return p === Phase.queued ? sum : sum + (estimates?.[i] ?? 0);
    },
    (state.checkRejectedCredits ?? 0) + (state.lostCredits ?? 0),
  );
  return committed + (estimates?.[phase.indexOf(Phase.queued)] ?? 0) > allowance;
}
