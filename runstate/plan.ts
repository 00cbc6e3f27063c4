// The frozen plan of a run under `<output>/.pixelmill/`: `plan-<hash16>.jsonl` holds every planned
// item in manifest order, `plan-<hash16>.json` the run's settings (no secrets: the key's env var
// *name* at most). Written once per manifest hash; every later activity reads items by index from
// here, so workflow inputs carry only a PlanRef and offsets. The meta file is written last, so
// its presence means the plan is complete. A plan that cannot be read is a non-retryable
// `PlanMissing` failure: no retry of the activity reading it would help.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../common/failure-types.js';
import { SHARD_SIZE } from '../common/names.js';
import type { PlanRef } from '../common/types.js';
import type { LoadedManifest } from '../manifest/load.js';
import type { PlannedItem, RunSettings } from '../manifest/normalize.js';
import { STATE_DIR_NAME } from '../manifest/schema.js';
import { providerNamed } from '../providers/registry.js';
import { pathExists } from '../storage/files.js';
import { parseJsonLines, writeFileAtomic } from './files.js';

export { STATE_DIR_NAME };
export const PLAN_FORMAT_VERSION = 1;
/** Expected credits per image until the API reports the real cost. */
export const DEFAULT_CREDITS_PER_IMAGE: Readonly<Record<string, number>> = { '1K': 1, '2K': 2, '4K': 4 };

/** What pricing an item takes from the run: its provider and mode, and its price table. */
export type ItemPricing = Pick<RunSettings, 'provider' | 'apiMode' | 'creditsPerImage' | 'manifestPricing'>;

/**
 * What an item is expected to cost before the API says: n x the price of one of its images, as
 * its provider prices it (OpenAI: by model, size, quality, Batch or sync), else by resolution.
 * The one estimate of `plan`, the budget's allowances and the shards' budget checks.
 */
export function estimatedCredits(item: PlannedItem, pricing: ItemPricing): number {
  const { imageCredits } = providerNamed(pricing.provider);
  const perImage = imageCredits
    ? imageCredits(item, pricing.apiMode, pricing.manifestPricing ? pricing.creditsPerImage : undefined)
    : (pricing.creditsPerImage[item.resolution] ?? 0);
  return item.n * perImage;
}

/** The run settings (never secrets: the key's env var name only), plus what the plan adds. */
export interface PlanMeta extends RunSettings {
  version: number;
  /** The full manifest hash. */
  hash: string;
  itemCount: number;
  imageCount: number;
  creditsPerImage: Record<string, number>;
  /** Expected credits of each shard's items (SHARD_SIZE each); absent in older plans. */
  shardCredits?: number[];
  /** An incremental run's: items [0, generateCount) are generated, the rest carried over. */
  generateCount?: number;
  /** An incremental run's: the run whose catalog it was compared with (workflow id @ execution). */
  basis?: string;
  /** Delete the stored results no item uses any more when the run's report is written. */
  prune?: boolean;
  /** An incremental run's: the manifest's own hash (`hash` is the plan's). */
  manifestHash?: string;
}

/**
 * An incremental run's plan (catalog/diff.ts): the items to generate first, then the carried
 * ones, each with its manifest position.
 */
export interface IncrementalPlan {
  items: PlannedItem[];
  generateCount: number;
  basis?: string;
  prune: boolean;
}

/** What a plan is made of: its hash (the manifest's, unless incremental), items and meta. */
export function planContent(
  manifest: LoadedManifest,
  incremental?: IncrementalPlan,
): { hash: string; items: PlannedItem[]; meta: PlanMeta } {
  if (!incremental) {
    const meta = planMeta(manifest.settings, manifest.items, manifest.hash);
    return { hash: manifest.hash, items: manifest.items, meta };
  }
  // The same manifest against another catalog state is another plan.
  const hash = createHash('sha256')
    .update(manifest.hash)
    .update(JSON.stringify([incremental.generateCount, incremental.basis ?? null, incremental.prune]))
    .update(JSON.stringify(incremental.items))
    .digest('hex');
  const generated = incremental.items.slice(0, incremental.generateCount);
  const meta: PlanMeta = {
    ...planMeta(manifest.settings, incremental.items, hash),
    shardCredits: shardCredits(generated, manifest.settings),
    generateCount: incremental.generateCount,
    prune: incremental.prune,
    manifestHash: manifest.hash,
  };
  if (incremental.basis !== undefined) meta.basis = incremental.basis;
  return { hash, items: incremental.items, meta };
}

export interface LoadedPlan {
  meta: PlanMeta;
  items: PlannedItem[];
}

/** Expected credits of each shard's items. */
export function shardCredits(items: readonly PlannedItem[], pricing: ItemPricing): number[] {
  const credits: number[] = [];
  items.forEach((item, index) => {
    const shard = Math.floor(index / SHARD_SIZE);
    credits[shard] = (credits[shard] ?? 0) + estimatedCredits(item, pricing);
  });
  return credits;
}

export function stateDirOf(outputDir: string): string {
  return join(outputDir, STATE_DIR_NAME);
}

export function planFiles(ref: PlanRef): { items: string; meta: string } {
  const stem = join(ref.stateDir, `plan-${ref.planHash.slice(0, 16)}`);
  return { items: `${stem}.jsonl`, meta: `${stem}.json` };
}

export function planMeta(settings: RunSettings, items: readonly PlannedItem[], hash: string): PlanMeta {
  const meta: PlanMeta = {
    version: PLAN_FORMAT_VERSION,
    name: settings.name,
    hash,
    manifestFile: settings.manifestFile,
    apiKeyEnv: settings.apiKeyEnv,
    requestsPerSecond: settings.requestsPerSecond,
    maxInFlight: settings.maxInFlight,
    outputDir: settings.outputDir,
    pathTemplate: settings.pathTemplate,
    taskTimeoutMs: settings.taskTimeoutMs,
    retry: settings.retry,
    checks: settings.checks,
    itemCount: items.length,
    imageCount: items.reduce((sum, item) => sum + item.n, 0),
    creditsPerImage: { ...settings.creditsPerImage },
    shardCredits: shardCredits(items, settings),
  };
  if (settings.manifestPricing) meta.manifestPricing = true;
  if (settings.provider !== undefined) meta.provider = settings.provider;
  if (settings.creditsEstimated) meta.creditsEstimated = true;
  if (settings.webhooks !== undefined) meta.webhooks = settings.webhooks;
  if (settings.apiBaseUrl !== undefined) meta.apiBaseUrl = settings.apiBaseUrl;
  if (settings.budgetCredits !== undefined) meta.budgetCredits = settings.budgetCredits;
  if (settings.rateCaps !== undefined) meta.rateCaps = settings.rateCaps;
  if (settings.objectStore !== undefined) meta.objectStore = settings.objectStore;
  if (settings.deadline !== undefined) meta.deadline = settings.deadline;
  if (settings.publicUrl !== undefined) meta.publicUrl = settings.publicUrl;
  // api.mode and its batch settings (a provider that submits several ways: OpenAI).
  if (settings.apiMode !== undefined) meta.apiMode = settings.apiMode;
  if (settings.maxEnqueuedImages !== undefined) meta.maxEnqueuedImages = settings.maxEnqueuedImages;
  if (settings.retryIn !== undefined) meta.retryIn = settings.retryIn;
  if (settings.batchPollMs !== undefined) meta.batchPollMs = settings.batchPollMs;
  return meta;
}

/**
 * Writes the plan of `manifest` unless a complete plan for its hash is already there; returns
 * the plan's meta (the existing one when reused, so the first preparation stays authoritative).
 */
export async function writePlanOnce(
  manifest: LoadedManifest,
  incremental?: IncrementalPlan,
): Promise<{ ref: PlanRef; meta: PlanMeta }> {
  const { hash, items, meta } = planContent(manifest, incremental);
  const ref: PlanRef = { stateDir: stateDirOf(manifest.settings.outputDir), planHash: hash };
  const files = planFiles(ref);
  if ((await pathExists(files.meta)) && (await pathExists(files.items))) {
    const existing = await readPlanMeta(ref);
    if (existing.hash === hash) return { ref, meta: existing };
  }
  await writeFileAtomic(
    files.items,
    items.map((item) => `${JSON.stringify(item)}\n`),
  );
  await writeFileAtomic(files.meta, [`${JSON.stringify(meta, null, 2)}\n`]);
  return { ref, meta };
}

/** The failure for an item index beyond the plan's `count` items: a bug, not worth a retry. */
export function planIndexOutOfRange(index: number, count: number): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.PlanIndexOutOfRange,
    message: `item index ${index} is not in the plan (0..${count - 1})`,
    nonRetryable: true,
  });
}

export function planMissing(ref: PlanRef, why: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.PlanMissing,
    message: `the run's plan in ${ref.stateDir} cannot be read (${why}); start the run again with --new-run`,
    nonRetryable: true,
  });
}

/**
 * A local output's state directory that this machine does not have: the run was started on
 * another machine, whose folder this worker cannot see.
 */
function stateDirNotHere(ref: PlanRef): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.PlanMissing,
    message:
      `this worker cannot see the run's plan at ${ref.stateDir}: a local output must be a folder every worker ` +
      'reaches at that same path (a shared volume), or give the manifest an s3:// output, which workers share through the store',
    nonRetryable: true,
  });
}

/** The plan's meta file alone (small; the items file is not read). */
export async function readPlanMeta(ref: PlanRef): Promise<PlanMeta> {
  let text: string;
  try {
    text = await readFile(planFiles(ref).meta, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !(await pathExists(ref.stateDir))) throw stateDirNotHere(ref);
    throw planMissing(ref, code ?? 'unreadable');
  }
  try {
    return JSON.parse(text) as PlanMeta;
  } catch {
    throw planMissing(ref, 'its meta file is not JSON');
  }
}

/** The whole plan, checked against its ref's hash and its meta's item count. */
export async function readPlanFiles(ref: PlanRef): Promise<LoadedPlan> {
  const meta = await readPlanMeta(ref);
  if (meta.hash !== ref.planHash) throw planMissing(ref, 'it belongs to another manifest hash');
  let text: string;
  try {
    text = await readFile(planFiles(ref).items, 'utf8');
  } catch (error) {
    throw planMissing(ref, (error as NodeJS.ErrnoException).code ?? 'unreadable');
  }
  const items = [...parseJsonLines(text)] as PlannedItem[];
  if (items.length !== meta.itemCount) {
    throw planMissing(ref, `it holds ${items.length} items, its meta says ${meta.itemCount}`);
  }
  return { meta, items };
}
