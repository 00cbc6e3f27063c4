// The rates in force in words, one vocabulary for the Temporal UI, the live display, `status`
// and summary.json; and the check of a worker's report before the governor takes it.
import type { RateSource } from './rate-law.js';
import {
  API_GROUPS,
  type ApiGroup,
  type GovernorReport,
  type GovernorView,
  type GroupGrant,
  type RateCaps,
  type RateInForce,
  type RunRates,
} from './types.js';

const SOURCE_WORDS: Record<RateSource, string> = {
  discovering: 'discovering',
  discovered: 'discovered',
  'retry-after': "held by the provider's Retry-After",
  capped: 'capped by the manifest',
  floor: 'at the floor: the provider refuses nearly everything',
};

/** `12.5/s`, `0.2/s`, `48/s`. */
export function formatRate(perSecond: number): string {
  const rounded = perSecond >= 10 ? Math.round(perSecond) : Math.round(perSecond * 10) / 10;
  return `${rounded}/s`;
}

/** `48/s (discovered)`; at the floor, since when; held, until when. */
export function describeGrant(
  grant: Pick<GroupGrant, 'ratePerSecond' | 'holdUntilMs' | 'source' | 'sinceMs'>,
  nowMs: number,
): string {
  const since = grant.source === 'floor' ? ` since ${new Date(grant.sinceMs).toISOString()}` : '';
  const held =
    grant.holdUntilMs > nowMs ? `, nothing sent until ${new Date(grant.holdUntilMs).toISOString()}` : '';
  return `${formatRate(grant.ratePerSecond)} (${SOURCE_WORDS[grant.source]}${since}${held})`;
}

/** The governor's details in the Temporal UI. */
export function describeGrants(view: GovernorView, nowMs = Date.now()): string {
  return (
    `API rate of account ${view.account}: submits ${describeGrant(view.groups.submit, nowMs)}, ` +
    `lookups ${describeGrant(view.groups.query, nowMs)}; ${view.workers} worker(s) reporting.`
  );
}

/** Why a report cannot be taken, or undefined when it can. */
export function reportProblem(report: GovernorReport): string | undefined {
  if (typeof report?.worker !== 'string' || typeof report.groups !== 'object' || report.groups === null)
    return 'a report names its worker and its groups';
  for (const [group, outcomes] of Object.entries(report.groups)) {
    if (!(API_GROUPS as readonly string[]).includes(group)) return `unknown endpoint group "${group}"`;
    for (const field of ['attempted', 'admitted', 'refused'] as const) {
      const value = outcomes?.[field];
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
        return `${group}.${field} must be a count, got ${String(value)}`;
    }
    const wait = outcomes.retryAfterMs;
    if (wait !== undefined && (typeof wait !== 'number' || !(wait >= 0)))
      return `${group}.retryAfterMs must be a duration, got ${String(wait)}`;
  }
  return undefined;
}

/** A run's rates: the account's (the governor's view) under the run's caps. */
export function runRates(view: GovernorView, caps: RateCaps, nowMs: number): RunRates {
  const group = (name: ApiGroup): RateInForce => {
    const grant = view.groups[name];
    const cap = Math.min(caps[name] ?? Infinity, caps.all ?? Infinity);
    const capped = cap < grant.ratePerSecond;
    return {
      perSecond: capped ? cap : grant.ratePerSecond,
      source: capped ? 'capped' : grant.source,
      since: new Date(capped ? nowMs : grant.sinceMs).toISOString(),
      ...(grant.holdUntilMs > nowMs ? { holdUntil: new Date(grant.holdUntilMs).toISOString() } : {}),
    };
  };
  return { mode: 'auto', submit: group('submit'), query: group('query'), workers: view.workers };
}

/** `submits 48/s (discovered), lookups 50/s (discovered)`, or `5/s (fixed)`. */
export function describeRunRates(rates: RunRates): string {
  if (rates.mode === 'fixed') return `${formatRate(rates.requestsPerSecond)} (fixed)`;
  const one = (rate: RateInForce): string =>
    describeGrant(
      {
        ratePerSecond: rate.perSecond,
        source: rate.source,
        sinceMs: Date.parse(rate.since),
        holdUntilMs: rate.holdUntil ? Date.parse(rate.holdUntil) : 0,
      },
      Date.now(),
    );
  return `submits ${one(rates.submit)}, lookups ${one(rates.query)}`;
}
