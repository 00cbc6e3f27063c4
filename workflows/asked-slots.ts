// Where a shard's submits themselves ask a provider for slots (BFL without webhooks: it refuses
// over its concurrency and only polls tell of finished tasks; concurrency-cap.ts, `polled`): how
// many slots the shard expects free now, and when the next should free.
// The shard keeps no cap. It keeps what the provider's refusals showed of its concurrency, in the
// shard's own measure: the tasks expected still running when the provider said it was full, each
// task not known finished counting with the share of generation times longer than its age. A
// slice goes when that measure says a slot is free and takes as many as it says are, so a refusal
// comes where the guess was wrong, not at the end of every slice (a slice stops at its first
// refusal: asking again a slot's interval after each one cost 1.4 refused calls an image at 2x
// compression; BENCHMARKS.md, providers). Being in the shard's own measure, the concurrency seen
// absorbs the bias of the generation times the polls teach (each the middle of a span between
// calls). It grows between refusals (SEEN_GROWTH), to find slots others freed and to make up for
// the refusals' own bias: a refusal comes when the shard's measure ran low, and pulls it lower.
// Pure functions of the shard's counts, with workflow time.
import type { ConcurrencyCapState } from '../common/types.js';
import { RELEASE_MIN_SAMPLES } from './concurrency-cap.js';
import { finishedShare } from './lookup-timing.js';

/** The resolution of the search for the next slot's release. */
const STEP_MS = 5;

/** The shard's tasks at the provider not known finished: submitted at, and submits on their way. */
export interface HeldTasks {
  heldSinceMs: readonly number[];
  submitting: number;
}

/**
 * Generation times, sorted, when there are as many as ages are trusted by elsewhere
 * (RELEASE_MIN_SAMPLES); below, every task counts as running.
 */
export function agesWeighedBy(samples: readonly number[] | undefined): number[] | undefined {
  if (!samples || samples.length < RELEASE_MIN_SAMPLES) return undefined;
  return [...samples].sort((a, b) => a - b);
}

/** The tasks expected still running at `nowMs` (all of them, without generation times to weigh by). */
export function expectedRunning(
  held: HeldTasks,
  nowMs: number,
  sorted: readonly number[] | undefined,
): number {
  if (!sorted) return held.submitting + held.heldSinceMs.length;
  let running = held.submitting;
  for (const since of held.heldSinceMs) running += 1 - finishedShare(sorted, nowMs - since);
  return running;
}

/**
 * What the concurrency seen grows by per its own number of tasks finished (about a generation):
 * more refusals (a call each), fewer slots left idle (BENCHMARKS.md, providers).
 */
export const SEEN_GROWTH = 16;

/** The concurrency the refusals showed, grown since; undefined before the first refusal (every submit asks). */
export function concurrencySeen(state: ConcurrencyCapState, doneNow: number): number | undefined {
  if (!state.polled || state.probing) return undefined;
  const finished = Math.max(0, doneNow - state.doneAt);
  return state.base + Math.floor((finished * SEEN_GROWTH) / Math.max(1, Math.round(state.base)));
}

/**
 * The provider refused while the shard expected `running` of its tasks to run: the first refusal
 * sets the concurrency seen to that; later ones take one off, down to that at most (each
 * expectation is a sum of chances, a few tasks either way: a refusal comes when it ran low, and
 * setting the concurrency to it, or halfway, left slots idle; BENCHMARKS.md, providers).
 */
export function seenAtRefusal(
  state: ConcurrencyCapState,
  running: number,
  doneNow: number,
): ConcurrencyCapState {
  const seen = concurrencySeen(state, doneNow);
  const base = Math.max(1, seen === undefined ? running : Math.max(Math.min(running, seen), seen - 1));
  return { ...state, base, doneAt: doneNow, probing: false };
}

/**
 * When the shard should expect a slot free (`seen` less the tasks expected running at least one):
 * `nowMs` if one is, Infinity when no task's age will free one (no generation times to go by, or
 * only submits on their way).
 */
export function nextFreeAtMs(
  seen: number,
  held: HeldTasks,
  nowMs: number,
  sorted: readonly number[] | undefined,
): number {
  const freeAt = (atMs: number): boolean => seen - expectedRunning(held, atMs, sorted) >= 1;
  if (freeAt(nowMs)) return nowMs;
  if (!sorted || seen - held.submitting < 1) return Number.POSITIVE_INFINITY;
  // Every held task has outlived every generation time by then.
  let low = nowMs;
  let high = nowMs + sorted[sorted.length - 1]! + 1;
  while (high - low > STEP_MS) {
    const middle = Math.floor((low + high) / 2);
    if (freeAt(middle)) high = middle;
    else low = middle;
  }
  return high;
}
