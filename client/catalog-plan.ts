// `pixelmill plan`, `run --dry-run` and the line `run` prints when it starts: the manifest
// compared with the catalog its output holds (catalog/diff.ts), against what is really stored
// there (a size per file: a stat each in a folder, one listing of the prefix in a bucket), with
// the credits and time that will take (catalog/estimate.ts). Nothing is submitted.
import { statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { diffCatalog, type CatalogDiff } from '../catalog/diff.js';
import { estimatePlan, type PlanEstimate } from '../catalog/estimate.js';
import { generationKey } from '../catalog/generation-key.js';
import { readCatalogIndex, type CatalogEntry, type CatalogIndex } from '../catalog/index-file.js';
import { rebuildCatalogIndex } from '../catalog/rebuild-index.js';
import { plural } from '../common/words.js';
import type { Expansion } from '../manifest/expand.js';
import type { LoadedManifest } from '../manifest/load.js';
import type { PlannedItem, RunSettings } from '../manifest/normalize.js';
import { DEFAULT_EXTENSION, renderResultPath } from '../manifest/result-paths.js';
// Not runstate/index.js nor run-files.js: `plan` of a local output loads no S3 client and no Temporal.
import { LocalRunStateStore } from '../runstate/local.js';
import { estimatedCredits, STATE_DIR_NAME, stateDirOf, type IncrementalPlan } from '../runstate/plan.js';
import type { RunStateStore, StateLocation } from '../runstate/store.js';
import { s3UrlOf } from '../storage/s3-location.js';
import { providerNamed } from '../providers/registry.js';
import type { ApiMode } from '../providers/types.js';

/** With `variants`: products x variants, and each variant's outputs and how many to generate. */
export interface PlanVariants {
  products: number;
  variants: { id: string; outputs: number; generate: number }[];
}

export interface CatalogPlan {
  catalog: string;
  diff: CatalogDiff;
  variants?: PlanVariants;
  estimate: PlanEstimate;
  /** Why the output's index was not used, when it was not (another catalog's). */
  note?: string;
  /** What an incremental run freezes; undefined when nothing is carried over (a plain run). */
  incremental?: IncrementalPlan;
  /** A provider with several modes (OpenAI): the one the run takes, why, and the price of each. */
  mode?: PlanMode;
}

export interface PlanMode {
  mode: ApiMode;
  reason: string;
  prices: Record<ApiMode, number>;
}

/** The run's mode and what its items to generate cost in each mode, when the provider has modes. */
function planMode(settings: RunSettings, generate: readonly PlannedItem[]): PlanMode | undefined {
  const prices = providerNamed(settings.provider).pricesByMode?.(
    generate,
    settings.manifestPricing ? settings.creditsPerImage : undefined,
  );
  if (!prices || settings.apiMode === undefined) return undefined;
  return { mode: settings.apiMode, reason: settings.apiModeReason ?? '', prices };
}

/** `mode batch (412 items, over 50: ...): $6.20 at batch prices, $12.40 at sync prices`. */
function describeMode(mode: PlanMode): string {
  const usd = (amount: number) => `$${amount.toFixed(2)}`;
  return `mode ${mode.mode} (${mode.reason}): ${usd(mode.prices.batch)} at batch prices, ${usd(mode.prices.sync)} at sync prices`;
}

export function stateLocationOf(settings: RunSettings): StateLocation {
  const store = settings.objectStore;
  return store
    ? { stateDir: `${s3UrlOf(store)}/${STATE_DIR_NAME}`, objectStore: store }
    : { stateDir: stateDirOf(settings.outputDir) };
}

/** The CLI's run state for an S3 output (run-files.ts), imported only then. */
async function cliRunState() {
  return (await import('./run-files.js')).runState;
}

async function readIndex(settings: RunSettings): Promise<{ index?: CatalogIndex; note?: string }> {
  const runState: RunStateStore = settings.objectStore ? await cliRunState() : new LocalRunStateStore();
  const lines = await runState.readCatalogIndexLines(stateLocationOf(settings));
  if (lines === undefined) {
    const rebuilt = await rebuildCatalogIndex(runState, stateLocationOf(settings), settings.name);
    if (!rebuilt) return {};
    const note = `the output had no catalog index: rebuilt from the plans and outcomes of ${plural(rebuilt.runs, 'run')}`;
    return { index: rebuilt.index, note };
  }
  const index = await readCatalogIndex(lines);
  if (!index) return { note: "the output's catalog index is damaged: every item is generated again" };
  if (index.header.catalog !== settings.name) {
    return {
      note: `the output holds catalog "${index.header.catalog}", not "${settings.name}" (a renamed manifest is a new catalog): every item is generated`,
    };
  }
  return { index };
}

/**
 * The size of each stored file the index names for one of `keys`, as it is stored now. In a
 * folder, one synchronous stat per file: five times faster than a pool of asynchronous ones for
 * a 100,000-item catalog, and the CLI has nothing else to do meanwhile.
 */
async function storedSizes(
  settings: RunSettings,
  entries: readonly CatalogEntry[],
): Promise<Map<string, number>> {
  if (settings.objectStore)
    return (await cliRunState()).s3.objectsOf(settings.objectStore, { under: '' }).listSizes('');
  const sizes = new Map<string, number>();
  for (const entry of entries) {
    for (const { path } of entry.images) {
      const info = statSync(join(settings.outputDir, path), { throwIfNoEntry: false });
      if (info?.isFile()) sizes.set(path, info.size);
    }
  }
  return sizes;
}

export async function planCatalog(
  manifest: LoadedManifest,
  options: { prune: boolean; now?: number },
): Promise<CatalogPlan> {
  const { settings, items } = manifest;
  const { index, note } = await readIndex(settings);
  const itemKeys = index ? items.map(generationKey) : [];
  const keys = new Set(itemKeys);
  const candidates = (index?.entries ?? []).filter((entry) => keys.has(entry.key));
  const sizes = await storedSizes(settings, candidates);
  const diff = diffCatalog({
    items,
    ...(index ? { keys: itemKeys } : {}),
    index,
    storedBytes: (path) => sizes.get(path),
    pathsOf: (item, entry) =>
      entry.images.map((image, k) =>
        renderResultPath(settings.pathTemplate, {
          name: settings.name,
          item,
          index: k,
          ext: extname(image.path).slice(1) || DEFAULT_EXTENSION,
        }),
      ),
    now: options.now ?? Date.now(),
  });
  const estimate = estimatePlan(
    diff.generate,
    settings,
    (item) => estimatedCredits(item, settings),
    diff.basis,
  );
  const variants = manifest.expansion && planVariants(manifest.expansion, diff.generate);
  const incremental: IncrementalPlan | undefined =
    diff.carried.length > 0 || (options.prune && diff.counts.unused > 0)
      ? {
          items: [...diff.generate, ...diff.carried],
          generateCount: diff.generate.length,
          ...(diff.basis ? { basis: diff.basis.run } : {}),
          prune: options.prune,
        }
      : undefined;
  const mode = planMode(settings, diff.generate);
  return {
    catalog: settings.name,
    ...(mode ? { mode } : {}),
    diff,
    ...(variants ? { variants } : {}),
    estimate,
    ...(note ? { note } : {}),
    ...(incremental ? { incremental } : {}),
  };
}

function planVariants(expansion: Expansion, generate: readonly PlannedItem[]): PlanVariants {
  const toGenerate = new Map<string, number>();
  for (const item of generate)
    if (item.variant !== undefined) toGenerate.set(item.variant, (toGenerate.get(item.variant) ?? 0) + 1);
  return {
    products: expansion.products,
    variants: expansion.variants.map((variant) => ({
      ...variant,
      generate: toGenerate.get(variant.id) ?? 0,
    })),
  };
}

/** `3 products x 2 variants = 5 outputs (studio 3, room 2 to generate)`. */
function describeVariants(plan: PlanVariants): string {
  const outputs = plan.variants.reduce((sum, variant) => sum + variant.outputs, 0);
  const each = plan.variants.map((variant) => `${variant.id} ${variant.generate} of ${variant.outputs}`);
  return (
    `${plural(plan.products, 'product')} x ${plural(plan.variants.length, 'variant')} = ` +
    `${plural(outputs, 'output')} (to generate: ${each.join(', ')})`
  );
}

function duration(seconds: number): string {
  if (seconds < 90) return `${Math.ceil(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 90 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** One line: what the run will generate, carry over and leave, and what it will cost. */
export function describePlan(plan: CatalogPlan, prune: boolean): string {
  const { counts, basis } = plan.diff;
  const { estimate } = plan;
  const generate = counts.new + counts.changed + counts.regenerate;
  const parts = [
    basis
      ? `${plural(generate, 'item')} to generate (${counts.new} new, ${counts.changed} changed, ${counts.regenerate} gone for good)`
      : `a new catalog: ${plural(generate, 'item')} to generate`,
  ];
  if (basis) {
    parts.push(
      `${counts.unchanged} unchanged (${counts.moved} to copy to new paths)`,
      `${counts.restore} to fetch again`,
      `${counts.removed} removed`,
      prune
        ? `${plural(counts.unused, 'stored result')} no item uses to delete (--prune)`
        : `${plural(counts.unused, 'stored result')} no item uses left in storage (--prune deletes them)`,
    );
  }
  // Prices per megapixel make fractions: two decimals say what a budget needs.
  const amount = (credits: number) => Math.round(credits * 100) / 100;
  const byResolution = Object.entries(estimate.creditsByResolution)
    .map(([resolution, credits]) => `${amount(credits)} at ${resolution}`)
    .join(', ');
  const credits = `${plural(amount(estimate.credits), 'credit')}${byResolution ? ` (${byResolution})` : ''}`;
  const time =
    estimate.seconds === undefined
      ? 'time: the rate is discovered when the run starts'
      : `about ${duration(estimate.seconds)}` +
        (estimate.submitsPerSecond !== undefined && generate > 0
          ? ` at ${estimate.submitsPerSecond}/s (${estimate.rateSource}) + ${duration(estimate.generationSeconds)} of generation`
          : '');
  const variants = plan.variants ? `${describeVariants(plan.variants)}; ` : '';
  const mode = plan.mode ? `; ${describeMode(plan.mode)}` : '';
  return `${variants}${parts.join(', ')}; ${credits}${mode}; ${time}${plan.note ? ` (${plan.note})` : ''}`;
}

/** `plan --json`: the same, for scripts. */
export function planJson(plan: CatalogPlan, prune: boolean) {
  const { counts, basis, removed } = plan.diff;
  const { estimate } = plan;
  return {
    catalog: plan.catalog,
    basis: basis
      ? { run: basis.run, finished_at: basis.finished_at, manifest_hash: basis.manifest_hash }
      : null,
    items: counts.new + counts.changed + counts.unchanged + counts.restore + counts.regenerate,
    ...(plan.variants ? { products: plan.variants.products, variants: plan.variants.variants } : {}),
    counts,
    generate: counts.new + counts.changed + counts.regenerate,
    removed_ids: removed.map((entry) => entry.id),
    prune,
    credits: { total: estimate.credits, by_resolution: estimate.creditsByResolution },
    images: estimate.images,
    estimate: {
      seconds: estimate.seconds === undefined ? null : Math.round(estimate.seconds),
      submits_per_second: estimate.submitsPerSecond ?? null,
      rate_source: estimate.rateSource,
      generation_seconds: estimate.generationSeconds,
    },
    ...(plan.mode
      ? { mode: { mode: plan.mode.mode, reason: plan.mode.reason, prices_usd: plan.mode.prices } }
      : {}),
    ...(plan.note ? { note: plan.note } : {}),
  };
}
