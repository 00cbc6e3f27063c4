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
// - The cap counts the tasks the provider is working on: a finished one whose images are being
//   stored holds no slot at the provider, and counting it would leave that slot idle.
// - Polling, a task is known finished only when a call finds it so, a share of a generation after
//   it freed its slot. So a task stops counting once it is older than most generations were
//   (RELEASE_QUANTILE): the next one goes then, and the provider's refusal (or its queue) says
//   when that was early. The cap, set by those signals, absorbs the guess's bias.
// Pure functions of the shard's counts; the shard workflow keeps the state (ShardCarriedState).
import type { ConcurrencyCapState } from '../common/types.js';
import { quantile } from './single-checks.js';

/**
 * Tasks a shard keeps waiting in a provider's queue, as a share of what runs (at least one): the
 * provider has the next task at hand, and none waits long (bench/providers.ts: a margin of half
 * what runs measured worse, its queue wait counted into the generation times the calls are timed by).
 */
export const QUEUE_MARGIN_SHARE = 0.1;

export function startCap(start: number, doneNow: number): ConcurrencyCapState {
  return { base: Math.max(1, start), doneAt: doneNow, probing: true };
}

/** The cap in force, the provider being done with `doneNow` of the shard's items. */
export function capNow(state: ConcurrencyCapState, doneNow: number): number {
  const finished = Math.max(0, doneNow - state.doneAt);
  return state.base + (state.probing ? finished : Math.floor(finished / state.base));
}

/**
 * The provider refused a submit for its concurrency while the shard had `atProvider` tasks holding
 * slots there. The first refusal ends the slow start at what the provider took; later ones take one
 * off the cap: the provider is full for a moment, and the shard's count of its slots is a guess (by
 * its tasks' ages) that swings around the truth. The lane waits for a slot to free before it tries
 * again (shard-submit.ts), so a refusal costs one call.
 */
export function afterRefusal(
  state: ConcurrencyCapState,
  atProvider: number,
  doneNow: number,
): ConcurrencyCapState {
  const base = state.probing ? atProvider : capNow(state, doneNow) - 1;
  return { base: Math.max(1, base), doneAt: doneNow, probing: false };
}

/** The margin of tasks waiting in the provider's queue a cap of `cap` keeps. */
export function queueMargin(cap: number): number {
  return Math.max(1, Math.ceil(cap * QUEUE_MARGIN_SHARE));
}

/**
 * A lookup found about `queued` of the shard's tasks waiting behind others in the provider's queue
 * and `running` running: the cap comes down to what runs plus the margin, when more wait than the
 * margin allows; otherwise it stays.
 */
export function afterQueue(
  state: ConcurrencyCapState,
  running: number,
  queued: number,
  doneNow: number,
): ConcurrencyCapState {
  const cap = capNow(state, doneNow);
  if (queued <= queueMargin(cap)) return state;
  const runs = Math.max(1, running);
  return { base: runs + queueMargin(runs), doneAt: doneNow, probing: false };
}

/** The share of generation times a task must outlive before its slot is taken as probably free. */
export const RELEASE_QUANTILE = 0.5;
/** Generation times seen before ages are trusted to free slots. */
export const RELEASE_MIN_SAMPLES = 10;

/** The age past which a task is taken as finished; undefined while too few generations are known. */
export function releaseAgeMs(samples: readonly number[]): number | undefined {
  if (samples.length < RELEASE_MIN_SAMPLES) return undefined;
  return quantile(
    [...samples].sort((a, b) => a - b),
    RELEASE_QUANTILE,
  );
}

/**
 * Of the tasks at the provider not known finished (`submittedAtMs`, `submitting` more on their
 * way), those that still hold a slot at `nowMs`, and when the next of them is taken as finished
 * (Infinity when none will be).
 */
export function holdingSlots(
  submittedAtMs: readonly number[],
  submitting: number,
  nowMs: number,
  releaseAfterMs: number | undefined,
): { holding: number; nextReleaseAtMs: number } {
  if (releaseAfterMs === undefined)
    return { holding: submitting + submittedAtMs.length, nextReleaseAtMs: Number.POSITIVE_INFINITY };
  let holding = submitting;
  let nextReleaseAtMs = Number.POSITIVE_INFINITY;
  for (const submittedAt of submittedAtMs) {
    const releaseAt = submittedAt + releaseAfterMs;
    if (releaseAt <= nowMs) continue;
    holding++;
    nextReleaseAtMs = Math.min(nextReleaseAtMs, releaseAt);
  }
  return { holding, nextReleaseAtMs };
}
