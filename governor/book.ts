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
/** A worker that has not reported for this long no longer counts as one of the account's. */
export const REPORTER_FRESH_MS = 60_000;
/** A worker whose last calls of a group are older than this no longer shares its rate. */
export const CALLER_FRESH_MS = 3_000;

export function initialGovernorState(nowMs: number): GovernorState {
  const each = <T>(make: () => T): Record<ApiGroup, T> => ({ submit: make(), query: make() });
  return {
    laws: each(() => initialLaw(nowMs)),
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
    this.#state.pending[group].attempted += outcomes.attempted;
    const answers = {
      nowMs,
      admitted: outcomes.admitted,
      refused: outcomes.refused,
      attempted: 0,
      spanMs: 0,
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
    this.#setLaw(group, law, nowMs);
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
