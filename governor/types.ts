// What the rate governor (workflows/governor.ts) and the workers that call the API tell each
// other. Plain data: it travels as update arguments and results, and lands in Temporal history.
import type { LawState, RateSource } from './rate-law.js';

/** The spec's two endpoint groups: the model API (submit) and the platform API (task GET, batch lookup). */
export type ApiGroup = 'submit' | 'query';
export const API_GROUPS: readonly ApiGroup[] = ['submit', 'query'];

/**
 * A run's own ceilings in calls per second when its rate is discovered (`limits` with `auto`):
 * `all` for every call together (`requests_per_second`), else per group. Absent: no ceiling.
 */
export interface RateCaps {
  all?: number;
  submit?: number;
  query?: number;
}

/** What one worker's calls of one group got since its last report. */
export interface GroupOutcomes {
  /** Calls sent. */
  attempted: number;
  /** Calls the provider answered with anything but a 429. */
  admitted: number;
  /** Calls answered 429. */
  refused: number;
  /** The longest wait those 429s asked for, from the moment the report is sent. */
  retryAfterMs?: number;
}

export interface GovernorReport {
  /** The reporting worker's identity: for the governor's count of reporters, nothing else. */
  worker: string;
  groups: Partial<Record<ApiGroup, GroupOutcomes>>;
}

/** The rate one group may use, account-wide. */
export interface GroupGrant {
  /** Calls per second for every worker and run of the account together. */
  ratePerSecond: number;
  /** Epoch ms before which nothing may be sent (a quota's Retry-After); in the past when none. */
  holdUntilMs: number;
  source: RateSource;
  /** Since when the source has been what it is (how long at the floor, for instance). */
  sinceMs: number;
  /**
   * Workers calling this group lately (their last reports had calls of it): each paces at the
   * rate over this many, itself included. A worker that died drops out within seconds.
   */
  workers: number;
}

export type GovernorGrant = Record<ApiGroup, GroupGrant>;

/** The governor's state: what continue-as-new carries over. */
export interface GovernorState {
  laws: Record<ApiGroup, LawState>;
  /** Since when each group's source has been what it is. */
  sourceSince: Record<ApiGroup, number>;
  /** Calls reported since the law last judged the rate's use, summed over workers. */
  pending: Record<ApiGroup, { attempted: number; sinceMs: number }>;
  /** Workers that reported lately, with when they last did. */
  reporters: Record<string, number>;
  /** Per group, workers whose reports had calls of it, with when they last did. */
  callers: Record<ApiGroup, Record<string, number>>;
}

/** What `pixelmill status` and summary.json show of a group's rate. */
export interface GroupRateView extends GroupGrant {
  /** Calls per second the group's workers used over the last reports (measured, not granted). */
  usedPerSecond: number;
}

export interface GovernorView {
  account: string;
  groups: Record<ApiGroup, GroupRateView>;
  /** Workers that reported in the last minute. */
  workers: number;
}

/** The rate one group of a run's calls goes at, and why: one vocabulary for every view. */
export interface RateInForce {
  perSecond: number;
  source: RateSource;
  /** Since when the source has been what it is (ISO 8601): how long at the floor, for instance. */
  since: string;
  /** While a quota's Retry-After holds: nothing is sent before this (ISO 8601). */
  holdUntil?: string;
}

/**
 * A run's rates: a fixed `requests_per_second` for every call together, or the account's
 * discovered rates per group under the run's caps.
 */
export type RunRates =
  | { mode: 'fixed'; requestsPerSecond: number }
  | { mode: 'auto'; submit: RateInForce; query: RateInForce; workers: number };
