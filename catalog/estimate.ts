// What an incremental run will cost and how long it will take, before anything is spent: credits
// at the plan's expected prices, time at the rate in force (the manifest's fixed rate, else the
// rate the catalog's last run ended at, capped by the manifest) plus one generation time. Pure.
import type { PlannedItem, RunSettings } from '../manifest/normalize.js';
import type { CatalogHeader } from './index-file.js';

/** The provider's typical generation times (shared/spec/provider-notes.md), until a run learns its own. */
export const TYPICAL_GENERATION_MS: Readonly<Record<string, number>> = {
  '1K': 50_000,
  '2K': 80_000,
  '4K': 130_000,
};

export type RateSource = 'fixed' | 'last run' | 'cap' | 'unknown';

export interface PlanEstimate {
  credits: number;
  creditsByResolution: Record<string, number>;
  images: number;
  /** Submits per second the time is reckoned at; undefined when no rate is known yet. */
  submitsPerSecond: number | undefined;
  rateSource: RateSource;
  generationSeconds: number;
  /** Undefined when no rate is known: the governor finds it when the run starts. */
  seconds: number | undefined;
}

function submitRate(
  settings: Pick<RunSettings, 'requestsPerSecond' | 'rateCaps'>,
  basis: CatalogHeader | undefined,
): { perSecond: number | undefined; source: RateSource } {
  const caps = settings.rateCaps;
  if (caps === undefined) return { perSecond: settings.requestsPerSecond, source: 'fixed' };
  const cap = Math.min(caps.submit ?? Infinity, caps.all ?? Infinity);
  if (basis?.submit_rate !== undefined)
    return { perSecond: Math.min(basis.submit_rate, cap), source: 'last run' };
  return Number.isFinite(cap)
    ? { perSecond: cap, source: 'cap' }
    : { perSecond: undefined, source: 'unknown' };
}

/**
 * `prices`: credits per image by resolution, or each item's expected credits (a provider that
 * prices by more than the resolution: runstate/plan.ts's estimatedCredits).
 */
export function estimatePlan(
  generate: readonly PlannedItem[],
  settings: Pick<RunSettings, 'requestsPerSecond' | 'rateCaps'>,
  prices: Readonly<Record<string, number>> | ((item: PlannedItem) => number),
  basis: CatalogHeader | undefined,
): PlanEstimate {
  const creditsOf =
    typeof prices === 'function' ? prices : (item: PlannedItem) => item.n * (prices[item.resolution] ?? 0);
  const creditsByResolution: Record<string, number> = {};
  let images = 0;
  let slowest = 0;
  for (const item of generate) {
    images += item.n;
    const credits = creditsOf(item);
    creditsByResolution[item.resolution] = (creditsByResolution[item.resolution] ?? 0) + credits;
    slowest = Math.max(slowest, TYPICAL_GENERATION_MS[item.resolution] ?? 0);
  }
  const credits = Object.values(creditsByResolution).reduce((sum, value) => sum + value, 0);
  const rate = submitRate(settings, basis);
  const generationSeconds = generate.length === 0 ? 0 : (basis?.generation_ms ?? slowest) / 1000;
  // A fixed rate is shared by every call: each item's submit and each image's GET. A discovered
  // rate is per endpoint group, and the submits' is the one a run waits for.
  const calls = rate.source === 'fixed' ? generate.length + images : generate.length;
  const seconds =
    generate.length === 0
      ? 0
      : rate.perSecond === undefined
        ? undefined
        : calls / rate.perSecond + generationSeconds;
  return {
    credits,
    creditsByResolution,
    images,
    submitsPerSecond: rate.perSecond,
    rateSource: rate.source,
    generationSeconds,
    seconds,
  };
}
