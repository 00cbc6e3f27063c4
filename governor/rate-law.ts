// The control law of the adaptive rate governor: for one endpoint group of one API account, the
// rate to grant, learned from what the provider answered. Pure functions of a plain, serializable
// state and the time passed in, so that it runs the same in a workflow, an activity or a unit test.
//
// The law, in the terms of TCP's congestion control:
// - Slow start: from a modest rate, grow by half every second in which the rate was used and
//   nothing was refused, until the first 429; then from under the rate before the last growth
//   (the provider's burst may have hidden its limit for a while), with the rate refused as the
//   ceiling: the limit is under it, and a next refusal on the way back finds how far under.
// - A 429 with a short Retry-After (a bucket refilling) marks the rate it came at as the ceiling
//   and multiplies the rate by BACK_OFF. One with a long Retry-After (a quota per minute) is a
//   measurement: the provider admitted so many calls since its window last reset, over the time
//   until it resets again; the new rate is a little under that, and nothing is granted until the
//   reset. Either way, 429s within the Retry-After answer calls sent before the first was known:
//   the same refusal, not a new one.
// - Then, after SETTLE_MS, back towards the ceiling fast (half the way each second) up to
//   APPROACH of it; then gently, +1% a second, to a little over it; past that, with no refusal,
//   the limit has risen, and the steps double (2%, 4%, 8%, ... 25%) until a refusal finds the new
//   ceiling (the shape of TCP CUBIC's window). A quota is probed +5% per window, so it is not
//   overrun many times over within its own window.
// - Growth only while the rate is used: a run that submits less than it is granted learns nothing
//   about the provider and must not bank an untested rate. A stretch just after a growth is
//   judged by the rate before it (the workers hear of a growth a report later), and growth never
//   lowers the rate.
// - Never below FLOOR_PER_SECOND: a provider that refuses everything is asked about once every
//   five seconds, never in a tight loop.

/** The least rate granted: one call every 5 s. */
export const FLOOR_PER_SECOND = 0.2;
/** Where discovery starts: below any plausible provider limit, and growing from there. */
export const INITIAL_PER_SECOND = 4;
/**
 * Slow start multiplies the rate by this each second: less than TCP's doubling, because a
 * provider's bucket admits a burst before it refuses, so the first 429 comes late.
 */
export const SLOW_START_GROWTH = 1.5;
/** The largest probe step past the ceiling. */
export const MAX_PROBE_STEP = 0.25;
/** After a refusal with a short Retry-After, the rate is multiplied by this. */
export const BACK_OFF = 0.85;
/** The share of the ceiling the rate returns to fast after a refusal. */
export const APPROACH = 0.95;
/** Up to this much over the ceiling, a probe grows by PROBE_NEAR_CEILING a period. */
export const NEAR_CEILING = 0.05;
export const PROBE_NEAR_CEILING = 0.01;
/** After a refusal the rate holds this long before it grows again. */
export const SETTLE_MS = 1000;
/** After a refusal with a long one, the share of the measured quota rate granted. */
export const UNDER_QUOTA = 0.9;
/** The increase per window of a quota while nothing is refused. */
export const PROBE_STEP = 0.05;
/** Use under this share of the grant means the grant ran ahead of it. */
const RAN_AHEAD = 0.9;
/** Share of the granted rate that must have been used for the rate to grow. */
export const USED_ENOUGH = 0.7;
/** A Retry-After longer than this means a quota per window rather than a rate. */
export const WINDOWED_AFTER_MS = 2000;
/** A longer Retry-After (a garbled header) is taken as this; one that is no number, as none. */
export const MAX_RETRY_AFTER_MS = 3_600_000;
/** Without a Retry-After, a 429 is taken to ask for this. */
export const DEFAULT_RETRY_AFTER_MS = 1000;

export type RateSource = 'discovering' | 'discovered' | 'retry-after' | 'capped' | 'floor';

export interface LawState {
  ratePerSecond: number;
  phase: 'slow-start' | 'probing';
  /** Nothing is granted before this (a quota's Retry-After in force). */
  holdUntilMs: number;
  /** Refusals before this answer calls sent before the last one was known: not new news. */
  quietUntilMs: number;
  /** When the provider last let calls through again (the last refusal's reset, or the start). */
  admittingSinceMs: number;
  /** Calls admitted since then. */
  admittedSince: number;
  /** The time scale of the limit (its window, else the last Retry-After, at least 1 s): the probe's period. */
  periodMs: number;
  /** The length of the provider's quota window, once a long Retry-After showed there is one. */
  windowMs: number | null;
  /** When the rate last grew. */
  grewAtMs: number;
  /** When the last refusal came; null before any. */
  refusedAtMs: number | null;
  /** A cap from the manifest (requests_per_second or a group's own); null: none. */
  capPerSecond: number | null;
  source: RateSource;
  /** The rate at which a bucket last refused; null before, or for a quota. */
  ceilingPerSecond: number | null;
  /** Probe steps since the rate passed the ceiling: each one doubles. */
  probeSteps: number;
  /** Calls per second made over the last stretch judged; null before one. */
  usedPerSecond: number | null;
  /** The rate before it last grew: what the workers still sent at while the growth reached them. */
  previousRate: number;
}

/**
 * A provider that documents no rate limit, only a concurrency (fal, BFL), is not held to the slow
 * start from INITIAL_PER_SECOND: its governor starts here, and a 429 still brings it down.
 */
export const UNRATED_START_PER_SECOND = 200;

export function initialLaw(
  nowMs: number,
  capPerSecond: number | null = null,
  startPerSecond = INITIAL_PER_SECOND,
): LawState {
  return {
    ratePerSecond: capPerSecond === null ? startPerSecond : Math.min(startPerSecond, capPerSecond),
    phase: 'slow-start',
    holdUntilMs: nowMs,
    quietUntilMs: nowMs,
    admittingSinceMs: nowMs,
    admittedSince: 0,
    periodMs: 1000,
    windowMs: null,
    grewAtMs: nowMs,
    refusedAtMs: null,
    capPerSecond,
    source: 'discovering',
    ceilingPerSecond: null,
    probeSteps: 0,
    usedPerSecond: null,
    previousRate: capPerSecond === null ? INITIAL_PER_SECOND : Math.min(INITIAL_PER_SECOND, capPerSecond),
  };
}

/** What the calls of one group did over a stretch of time, reported to the law. */
export interface Outcomes {
  /** The end of the stretch (epoch ms). */
  nowMs: number;
  /** Calls the provider answered (anything but a 429). */
  admitted: number;
  /** Calls answered 429. */
  refused: number;
  /** The longest Retry-After among those 429s, when they said. */
  retryAfterMs?: number;
  /** Calls made over the stretch: whether the rate was used, or for a refusal the rate it came at. */
  attempted: number;
  /** The length of the stretch. */
  spanMs: number;
}

/** The rate in force at `nowMs`: 0 while a Retry-After holds. */
export function grantedRate(state: LawState, nowMs: number): number {
  return nowMs < state.holdUntilMs ? 0 : state.ratePerSecond;
}

function capped(state: LawState, rate: number): { ratePerSecond: number; source?: RateSource } {
  if (state.capPerSecond !== null && rate >= state.capPerSecond) {
    return { ratePerSecond: state.capPerSecond, source: 'capped' };
  }
  return { ratePerSecond: Math.max(FLOOR_PER_SECOND, rate) };
}

/** The law after `outcomes`. */
export function observe(state: LawState, outcomes: Outcomes): LawState {
  const { nowMs } = outcomes;
  // An empty stretch says nothing about the rate's use; a nonsense Retry-After is none.
  if (!(outcomes.spanMs > 0) && outcomes.refused === 0 && !(outcomes.admitted > 0)) return state;
  if (outcomes.refused > 0) return refusedAt(state, outcomes);
  const next: LawState = { ...state, admittedSince: state.admittedSince + outcomes.admitted };
  // Answers without a stretch of time are counted, not judged (the book feeds use once a second).
  if (!(outcomes.spanMs > 0) || nowMs < state.holdUntilMs) return next;
  if (next.source === 'retry-after') next.source = next.refusedAtMs === null ? 'discovering' : 'discovered';
  const usedPerSecond = (outcomes.attempted * 1000) / outcomes.spanMs;
  next.usedPerSecond = usedPerSecond;
  const step = next.phase === 'slow-start' ? 1000 : next.periodMs;
  // A growth reaches the workers a report later: a stretch just after it is judged by the rate before.
  const judgedBy = nowMs - state.grewAtMs < 2 * step ? state.previousRate : state.ratePerSecond;
  const used = usedPerSecond >= USED_ENOUGH * Math.min(judgedBy, state.ratePerSecond);
  if (!used || nowMs - state.grewAtMs < step) return next;
  const { factor, probeSteps } = growth(next);
  // In slow start a grant that ran well ahead of use is untested: growth from the rate actually
  // sent then. Never a fall: once probing, calls spread unevenly over workers use a little less
  // than the grant, and growing from that would shrink the rate a little each period.
  const ranAhead = next.phase === 'slow-start' && usedPerSecond < RAN_AHEAD * state.ratePerSecond;
  const limited = capped(
    next,
    Math.max(state.ratePerSecond, (ranAhead ? usedPerSecond : state.ratePerSecond) * factor),
  );
  return {
    ...next,
    ratePerSecond: limited.ratePerSecond,
    previousRate: state.ratePerSecond,
    grewAtMs: nowMs,
    probeSteps,
    source: limited.source ?? next.source,
  };
}

/** How much the rate grows this period, and the probe steps after. */
function growth(state: LawState): { factor: number; probeSteps: number } {
  if (state.phase === 'slow-start') return { factor: SLOW_START_GROWTH, probeSteps: 0 };
  if (state.windowMs !== null) return { factor: 1 + PROBE_STEP, probeSteps: 0 };
  const rate = state.ratePerSecond;
  const ceiling = state.ceilingPerSecond;
  if (ceiling !== null && rate < APPROACH * ceiling) {
    const halfway = rate + (APPROACH * ceiling - rate) / 2;
    return { factor: Math.max(1 + PROBE_NEAR_CEILING, halfway / rate), probeSteps: 0 };
  }
  if (ceiling !== null && rate < ceiling * (1 + NEAR_CEILING)) {
    return { factor: 1 + PROBE_NEAR_CEILING, probeSteps: 0 };
  }
  return {
    factor: 1 + Math.min(MAX_PROBE_STEP, 2 * PROBE_NEAR_CEILING * 2 ** state.probeSteps),
    probeSteps: state.probeSteps + 1,
  };
}

function refusedAt(state: LawState, outcomes: Outcomes): LawState {
  const { nowMs } = outcomes;
  const admitted = state.admittedSince + outcomes.admitted;
  if (nowMs < state.quietUntilMs) return { ...state, admittedSince: admitted };
  const retryAfterMs = Math.min(
    MAX_RETRY_AFTER_MS,
    Math.max(Number.isFinite(outcomes.retryAfterMs) ? outcomes.retryAfterMs! : DEFAULT_RETRY_AFTER_MS, 1),
  );
  const resetMs = nowMs + retryAfterMs;
  // A short wait is a rate (a bucket refilling): back off by a share. A long one is a quota per
  // window: what it admitted since it last reset, over the window, is the rate it sustains.
  // Near its reset a quota asks for a short wait too: once a window was seen, it is a window.
  const windowed = retryAfterMs > WINDOWED_AFTER_MS || state.windowMs !== null;
  const windowMs = resetMs - state.admittingSinceMs;
  const quotaRate = (admitted / windowMs) * 1000;
  // What was refused is the rate sent, when that was well under the rate granted. In slow start
  // the provider's burst may have hidden its limit for a while, so the limit is anywhere under
  // the rate sent: the fall goes below the rate before the last growth. The way back up is the
  // same as after any refusal (probing from there by 2% steps left a group half used for seconds).
  // What the calls of the stretch so far were sent at counts too (a burst after a quiet second).
  const sending = outcomes.spanMs > 0 ? (outcomes.attempted * 1000) / outcomes.spanMs : 0;
  const used = Math.max(state.usedPerSecond ?? Infinity, sending);
  const sent = used < RAN_AHEAD * state.ratePerSecond ? used : state.ratePerSecond;
  const slowStart = state.phase === 'slow-start';
  const limited = capped(
    state,
    windowed
      ? Math.min(state.ratePerSecond, quotaRate) * UNDER_QUOTA
      : (slowStart ? sent / SLOW_START_GROWTH : sent) * BACK_OFF,
  );
  return {
    ...state,
    ceilingPerSecond: windowed ? null : sent,
    probeSteps: 0,
    ratePerSecond: limited.ratePerSecond,
    phase: 'probing',
    // A quota admits nothing until it resets; a bucket refills at once, at the lower rate (and
    // the refused call itself waits its Retry-After, as every retry does).
    holdUntilMs: windowed ? resetMs : nowMs,
    quietUntilMs: resetMs,
    admittingSinceMs: resetMs,
    admittedSince: 0,
    periodMs: Math.max(1000, windowed ? windowMs : retryAfterMs),
    windowMs: windowed ? windowMs : null,
    grewAtMs: windowed ? resetMs : resetMs + SETTLE_MS,
    refusedAtMs: nowMs,
    source: limited.ratePerSecond <= FLOOR_PER_SECOND ? 'floor' : 'retry-after',
  };
}
