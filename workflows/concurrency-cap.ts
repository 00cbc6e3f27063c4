// How many tasks a shard keeps at a provider that limits tasks running at once (BFL: 24 active,
// a 429 over it; fal: a concurrency per account, the rest waiting in its queue without limit).
// The shard is not told the limit: it learns it the way TCP learns a path's window, from the
// provider's own signals.
// - It starts at its share of the documented concurrency (or a few) and, until the first signal,
//   adds one to the cap per task that finishes: the cap doubles every generation time (slow
//   start), so an account with 40 slots is found in a handful of generations.
// - A signal sets the cap to what the provider is taking now: on a refusal (429), the tasks the
//   shard has at the provider; on a queue (tasks waiting behind others), those minus the waiting
//   ones plus a margin (QUEUE_MARGIN_SHARE), so that the provider always has the next task at hand but nothing
//   waits long enough in its queue to outlive a result's retention.
// - After a signal, the cap grows by one per cap's worth of finished tasks (one per generation
//   time), so it finds slots freed by other shards or runs, at one refusal per `base` images.
// Pure functions of the shard's counts; the shard workflow keeps the state (ShardCarriedState).
import type { ConcurrencyCapState } from '../common/types.js';

/**
 * Tasks a shard keeps waiting in a provider's queue, as a share of what runs (at least one): the
 * provider has the next task at hand, and none waits long (bench/providers.ts: a margin of half
 * what runs measured worse, its queue wait counted into the generation times the calls are timed by).
 */
export const QUEUE_MARGIN_SHARE = 0.1;

export function startCap(start: number, finalNow: number): ConcurrencyCapState {
  return { base: Math.max(1, start), finalAt: finalNow, probing: true };
}

/** The cap in force, `finalNow` items being final. */
export function capNow(state: ConcurrencyCapState, finalNow: number): number {
  const finished = Math.max(0, finalNow - state.finalAt);
  return state.base + (state.probing ? finished : Math.floor(finished / state.base));
}

/** The provider refused a submit for its concurrency while the shard had `atProvider` tasks there. */
export function afterRefusal(atProvider: number, finalNow: number): ConcurrencyCapState {
  return { base: Math.max(1, atProvider), finalAt: finalNow, probing: false };
}

/** The margin of tasks waiting in the provider's queue a cap of `cap` keeps. */
export function queueMargin(cap: number): number {
  return Math.max(1, Math.ceil(cap * QUEUE_MARGIN_SHARE));
}

/**
 * A lookup found `queued` of the shard's tasks waiting behind others in the provider's queue,
 * `atProvider` being there: the cap comes down to what runs plus the margin, when more wait than
 * the margin allows; otherwise it stays.
 */
export function afterQueue(
  state: ConcurrencyCapState,
  atProvider: number,
  queued: number,
  finalNow: number,
): ConcurrencyCapState {
  const cap = capNow(state, finalNow);
  if (queued <= queueMargin(cap)) return state;
  const running = Math.max(1, atProvider - queued);
  return { base: running + queueMargin(running), finalAt: finalNow, probing: false };
}
