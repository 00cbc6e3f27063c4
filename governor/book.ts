// The governor's bookkeeping, pure and unit-tested without a server: the control law of each
// endpoint group fed with what every worker reports. Answers reach the law at once (a 429 must
// slow everyone now); the calls made are summed over the workers and fed once per second, so
// that the law judges the whole account's use of its rate, not one worker's slice of it.
import { grantedRate, initialLaw, observe, type LawState } from './rate-law.js';
import {
  API_GROUPS,
  type ApiGroup,
  type GovernorGrant,
  type GovernorReport,
  type GovernorState,
  type GovernorView,
  type GroupOutcomes,
} from './types.js';

/** Admitted calls are fed to the law at most this often. */
export const FEED_EVERY_MS = 1000;
/** A shorter stretch says too little about the rate a refusal came at. */
const MIN_REFUSED_SPAN_MS = 250;
/** A worker that has not reported for this long no longer counts as one of the account's. */
export const REPORTER_FRESH_MS = 60_000;
/** A worker whose last calls of a group are older than this no longer shares its rate. */
export const CALLER_FRESH_MS = 3_000;

/** `startPerSecond`: where the laws start (rate-law.ts, UNRATED_START_PER_SECOND); default the slow start's. */
export function initialGovernorState(nowMs: number, startPerSecond?: number): GovernorState {
  const each = <T>(make: () => T): Record<ApiGroup, T> => ({ submit: make(), query: make() });
  return {
    laws: each(() => initialLaw(nowMs, null, startPerSecond)),
    sourceSince: each(() => nowMs),
    pending: each(() => ({ attempted: 0, sinceMs: nowMs })),
    reporters: {},
    callers: each(() => ({})),
  };
}

export class GovernorBook {
  readonly #state: GovernorState;
  /** Calls per second each group used over the last stretch fed to its law. */
  readonly #used: Record<ApiGroup, number> = { submit: 0, query: 0 };

  constructor(state: GovernorState) {
    this.#state = copy(state);
  }

  /** One worker's report, received at `nowMs`. */
  report(report: GovernorReport, nowMs: number): void {
    const { reporters, callers } = this.#state;
    reporters[report.worker] = nowMs;
    forgetOlder(reporters, nowMs - REPORTER_FRESH_MS);
    for (const group of API_GROUPS) {
      const outcomes = report.groups[group];
      if (outcomes && outcomes.attempted > 0) callers[group][report.worker] = nowMs;
      forgetOlder(callers[group], nowMs - CALLER_FRESH_MS);
      if (outcomes) this.#take(group, outcomes, nowMs);
      this.#feed(group, nowMs);
    }
  }

  /** Answers reach the law at once (a 429 slows everyone now); use is judged once a second. */
  #take(group: ApiGroup, outcomes: GroupOutcomes, nowMs: number): void {
    const pending = this.#state.pending[group];
    pending.attempted += outcomes.attempted;
    // A refusal is judged with what was sent since the last feed too: a burst after a quiet
    // stretch is what the provider refused, not the quiet stretch's rate.
    const refusing = outcomes.refused > 0 && nowMs - pending.sinceMs >= MIN_REFUSED_SPAN_MS;
    const answers = {
      nowMs,
      admitted: outcomes.admitted,
      refused: outcomes.refused,
      attempted: refusing ? pending.attempted : 0,
      spanMs: refusing ? nowMs - pending.sinceMs : 0,
      ...(outcomes.retryAfterMs !== undefined ? { retryAfterMs: outcomes.retryAfterMs } : {}),
    };
    this.#setLaw(group, observe(this.#state.laws[group], answers), nowMs);
  }

  #feed(group: ApiGroup, nowMs: number): void {
    const pending = this.#state.pending[group];
    const spanMs = nowMs - pending.sinceMs;
    if (spanMs < FEED_EVERY_MS) return;
    this.#used[group] = (pending.attempted * 1000) / spanMs;
    const law = observe(this.#state.laws[group], {
      nowMs,
      admitted: 0,
      refused: 0,
      attempted: pending.attempted,
      spanMs,
    });
    this.#state.pending[group] = { attempted: 0, sinceMs: nowMs };
    this.#setLaw(group, keepUpWithSubmits(group, law, this.#used.submit), nowMs);
  }

  #setLaw(group: ApiGroup, law: LawState, nowMs: number): void {
    if (law.source !== this.#state.laws[group].source) this.#state.sourceSince[group] = nowMs;
    this.#state.laws[group] = law;
  }

  grants(nowMs: number): GovernorGrant {
    const grant = (group: ApiGroup) => {
      const law = this.#state.laws[group];
      return {
        ratePerSecond: law.ratePerSecond,
        holdUntilMs: grantedRate(law, nowMs) === 0 ? law.holdUntilMs : 0,
        source: law.source,
        sinceMs: this.#state.sourceSince[group],
        workers: since(this.#state.callers[group], nowMs - CALLER_FRESH_MS),
      };
    };
    return { submit: grant('submit'), query: grant('query') };
  }

  view(account: string, nowMs: number): GovernorView {
    const grants = this.grants(nowMs);
    const workers = since(this.#state.reporters, nowMs - REPORTER_FRESH_MS);
    return {
      account,
      groups: {
        submit: { ...grants.submit, usedPerSecond: this.#used.submit },
        query: { ...grants.query, usedPerSecond: this.#used.query },
      },
      workers,
    };
  }

  state(): GovernorState {
    return copy(this.#state);
  }
}

/**
 * Every image is a submit, then a GET: until the queries' own limit is found, their rate keeps up
 * with what the submits use, so the GETs of finished tasks do not queue behind a slow start
 * that only begins when the first tasks finish.
 */
function keepUpWithSubmits(group: ApiGroup, law: LawState, submitsPerSecond: number): LawState {
  if (group !== 'query' || law.phase !== 'slow-start' || law.ratePerSecond >= submitsPerSecond) return law;
  return { ...law, ratePerSecond: submitsPerSecond, previousRate: law.ratePerSecond };
}

/** A deep copy of plain data (workflow code has no structuredClone). */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Drops the workers last seen before `cutoffMs`. */
function forgetOlder(lastSeen: Record<string, number>, cutoffMs: number): void {
  for (const [worker, at] of Object.entries(lastSeen)) if (at < cutoffMs) delete lastSeen[worker];
}

/** How many workers were seen at or after `cutoffMs`. */
function since(lastSeen: Record<string, number>, cutoffMs: number): number {
  return Object.values(lastSeen).filter((at) => at >= cutoffMs).length;
}
