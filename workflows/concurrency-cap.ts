// How many tasks a shard keeps at a provider that limits tasks running at once (BFL: 24 active,
// a 429 over it; fal: a concurrency per account, the rest waiting in its queue without limit).
// The shard is not told the limit: it learns it the way TCP learns a path's window, from the
// provider's own signals.
// - It starts at its share of the documented concurrency (or a few) and, until the first signal,
//   adds one to the cap per task that finishes: the cap doubles every generation time (slow
//   start), so an account with 40 slots is found in a handful of generations.
// - A signal sets the cap to what the provider is taking now: on a refusal (429), the tasks the
//   shard has at the provider. A queuing provider (fal) says at every submit how many of the
//   account's tasks wait ahead (afterSubmitQueue): the cap keeps that queue at a margin
//   (QUEUE_MARGIN_SHARE), so that a slot the provider frees starts the next task at once, however
//   late a poll learns it freed, and nothing waits long in its queue.
// - After a signal, the cap grows by one per cap's worth of finished tasks (one per generation
//   time), so it finds slots freed by other shards or runs, at one refusal per `base` images.
// - Where the provider refuses, a run's shards submit one at a time (run-shards.ts): caps learned
//   by each from refusals the others caused took turns at the slots. Each hands the next its cap
//   and its tasks still running, counted until their age says they finished (handedHolding).
// - Where the provider refuses and only polls tell of finished tasks (BFL without webhooks), the
//   submits themselves ask for slots (`polled`, asked-slots.ts): no cap, not even a slow start,
//   and after a refusal a slice goes when the tasks' ages say a slot has freed. A refused submit
//   costs one call, as the poll that would have found the slot free does, and an accepted one
//   takes the slot at once; polls, timed by tasks' ages, came in waves that left the slots idle
//   for half a second at a time (BENCHMARKS.md, providers).
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
 * Tasks a shard keeps waiting in a provider's queue, as a share of its cap (at least one): the
 * provider has the next task at hand, and none waits long (a task's queue wait counts into the
 * generation times its calls are timed by).
 */
export const QUEUE_MARGIN_SHARE = 0.1;

/**
 * A queuing provider's first cap for the whole account, shared by the shards submitting at once:
 * an overshoot only waits in the queue, and the first submits' answers correct it.
 */
export const QUEUED_START = 32;

export function startCap(start: number, doneNow: number, polled = false): ConcurrencyCapState {
  return { base: Math.max(1, start), doneAt: doneNow, probing: true, ...(polled ? { polled } : {}) };
}

/**
 * The cap a run's next shard starts with where the provider refuses over its concurrency: the one
 * its predecessor learned (HandedSlots), no slow start.
 */
export function handedCap(cap: number, doneNow: number, polled = false): ConcurrencyCapState {
  return { ...startCap(cap, doneNow, polled), probing: false };
}

/** The cap in force, the provider being done with `doneNow` of the shard's items. */
export function capNow(state: ConcurrencyCapState, doneNow: number): number {
  if (state.polled) return Number.POSITIVE_INFINITY;
  const finished = Math.max(0, doneNow - state.doneAt);
  return state.base + (state.probing ? finished : Math.floor(finished / state.base));
}

/** A cap set by a signal: `base` from now on. */
function setCap(state: ConcurrencyCapState, base: number, doneNow: number): ConcurrencyCapState {
  return {
    base: Math.max(1, base),
    doneAt: doneNow,
    probing: false,
    ...(state.polled ? { polled: true } : {}),
  };
}

/**
 * The provider refused a submit for its concurrency while the shard had `atProvider` tasks holding
 * slots there. The first refusal ends the slow start at what the provider took; later ones take one
 * off the cap: the provider is full for a moment, and the shard's count of its slots is a guess (by
 * its tasks' ages) that swings around the truth. The lane waits for a slot to free before it tries
 * again (shard-submit.ts), so a refusal costs one call. (Where the submits ask for slots, a refusal
 * sets what they go by instead: asked-slots.ts, seenAtRefusal.)
 */
export function afterRefusal(
  state: ConcurrencyCapState,
  atProvider: number,
  doneNow: number,
): ConcurrencyCapState {
  return setCap(state, state.probing ? atProvider : capNow(state, doneNow) - 1, doneNow);
}

/**
 * Until when a refusal holds a shard's submits: until one of its tasks is taken as finished by its
 * age, and at most one typical generation (the median of those seen, or `fallbackMs` before any).
 * A shard whose slots are all another shard's or run's (the next shard of a run, handed the lane
 * while its predecessor's tasks still run) has no task of its own to wait for: it tries again then,
 * at one refused call per generation. Where it `guesses` which of its `atProvider` tasks (its
 * predecessor's included) still run, twice the time in which one of them should finish: the
 * provider frees a slot about every typical / atProvider, and every other try finds one.
 */
export function refusalHoldUntil(
  nowMs: number,
  nextReleaseAtMs: number,
  samples: readonly number[] | undefined,
  fallbackMs: number,
  guessing?: { atProvider: number },
): number {
  const typicalMs =
    samples && samples.length > 0
      ? quantile(
          [...samples].sort((x, y) => x - y),
          RELEASE_QUANTILE,
        )
      : fallbackMs;
  const holdMs = guessing
    ? Math.min(typicalMs, (2 * typicalMs) / Math.max(1, guessing.atProvider))
    : typicalMs;
  return Math.min(nextReleaseAtMs, nowMs + holdMs);
}

/** The margin of tasks waiting in the provider's queue a cap of `cap` keeps. */
export function queueMargin(cap: number): number {
  return Math.max(1, Math.ceil(cap * QUEUE_MARGIN_SHARE));
}

/** A cap grows at least by this share of itself when a queuing provider's queue ran empty. */
export const EMPTY_QUEUE_GROWTH = 0.25;

/**
 * A slice of submits to a queuing provider got its answers, the fewest of the account's tasks
 * (every shard's and run's) waiting ahead of one of them being `ahead`: the queue before the
 * slice's own submits joined it (they count ahead of each other until they start). More than the
 * margin waiting: the cap comes down by the shard's part of the excess (`sharing` shards share
 * the account). Nothing waiting: the provider may have had a slot with no task, so the cap grows
 * (by a quarter, at least the margin); an overshoot only waits in the queue, and the next answers
 * take it off. While probing (slow start), only an excess ends it. Once per round: the answers of
 * slices sent before the cap last changed tell of the queue that change answered, and taking each
 * one's excess off (or adding for each empty one) would swing the cap from a queue of a hundred to
 * idle slots.
 */
export function afterSubmitQueue(
  state: ConcurrencyCapState,
  ahead: number,
  sharing: number,
  doneNow: number,
  slice: { sentAtMs: number; nowMs: number },
): ConcurrencyCapState {
  const told = state.queueAtSubmit ? state : { ...state, queueAtSubmit: true };
  // Sent before the cap last changed: the queue it saw is the one that change answered.
  if (state.changedAtMs !== undefined && slice.sentAtMs < state.changedAtMs) return told;
  const cap = capNow(state, doneNow);
  const margin = queueMargin(cap);
  const excess = ahead - margin * sharing;
  const changed = (base: number) => ({
    ...setCap(state, base, doneNow),
    queueAtSubmit: true,
    changedAtMs: slice.nowMs,
  });
  if (excess > 0) return changed(cap - Math.ceil(excess / sharing));
  if (ahead > 0 || state.probing) return told;
  return changed(cap + Math.max(margin, Math.ceil(cap * EMPTY_QUEUE_GROWTH)));
}

/**
 * Where submits' answers do not say how many wait ahead (afterSubmitQueue), a lookup tells: it
 * found about `queued` of the shard's tasks waiting behind others and `running` running. The cap
 * comes down to what runs plus the margin when more wait than the margin allows; otherwise it
 * stays. Once submits' answers have said, they alone set the cap: they see the whole account's
 * queue at once, a lookup only the tasks it asked about.
 */
export function afterLookupQueue(
  state: ConcurrencyCapState,
  running: number,
  queued: number,
  doneNow: number,
): ConcurrencyCapState {
  if (state.queueAtSubmit) return state;
  const cap = capNow(state, doneNow);
  if (queued <= queueMargin(cap)) return state;
  const runs = Math.max(1, running);
  return setCap(state, runs + queueMargin(runs), doneNow);
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
 * The predecessor's tasks that still hold slots, as far as this shard can tell: it hears of none
 * finishing, so each is taken as finished at the release age of the generation times
 * (releaseAgeMs; at once without enough of them); a refusal says when that was early.
 */
export function handedHolding(
  heldSinceMs: readonly number[],
  nowMs: number,
  releaseAfterMs: number | undefined,
): { holding: number; nextReleaseAtMs: number } {
  return holdingSlots(heldSinceMs, 0, nowMs, releaseAfterMs ?? 0);
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
