// From a validated manifest to what a run works with: every item with its parameters resolved
// and a stable id, and the run settings with their defaults filled in.
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { providerNamed } from '../providers/registry.js';
import { DEFAULT_PROVIDER, type ApiMode, type ProviderName } from '../providers/types.js';
import { RESOLUTIONS, type Language, type Resolution } from '../common/generation.js';
import { MEGAPIXELS } from '../providers/mapping.js';
import { isS3Url, parseS3Url, type S3Location } from '../storage/s3-location.js';
import type { RateCaps } from '../governor/types.js';
import { DEFAULT_CHECK_LEVELS, type CheckLevels } from '../checks/image-checks.js';
import { parseDeadline, parseDuration, type Deadline } from './durations.js';
import { DEFAULT_PATH_TEMPLATE, type ItemParams, type Manifest } from './schema.js';
import { notifyTargetsOf } from './notify.js';
import type { NotifyTarget } from '../common/notify-types.js';

export const DEFAULTS = {
  size: '1:1',
  resolution: '1K' as Resolution,
  n: 1,
  apiKeyEnv: 'PIXELMILL_API_KEY',
  webhookSecretEnv: 'PIXELMILL_WEBHOOK_SECRET',
  maxInFlight: 500,
  retryMaxAttempts: 3,
  /**
   * Random generation failures, tasks the provider never finished and results it deleted before
   * they were stored (its retention) are worth another try; content-policy refusals are not.
   */
  retryOn: ['generation_error', 'task_timeout', 'result_expired', 'task_expired'],
  /**
   * How long a task may stay unfinished at the API before it is given up: far above the slowest
   * generation the provider documents (about 130 s at 4K) and its queueing.
   */
  taskTimeoutMs: 30 * 60_000,
};

/** One item, every parameter resolved: exactly what is submitted. */
export interface PlannedItem {
  id: string;
  prompt: string;
  model: string;
  size: string;
  resolution: Resolution;
  n: number;
  image_urls?: string[];
  language?: Language;
  /** The provider's own input fields, passed through after pixelmill's mapping. */
  params?: Record<string, unknown>;
  /** With `variants`: the source item's id (the product), and the variant this output is of. */
  product?: string;
  variant?: string;
  /** The item's variables: its row's other columns (or its `variables`), shared by its variants. */
  variables?: Record<string, string>;
  /**
   * An incremental run's plan puts the items to generate first: the item's place in the manifest,
   * which report.jsonl and the gallery keep.
   */
  position?: number;
  /** In an incremental run's plan: the stored result this item is carried over from, not generated. */
  reuse?: ReusedResult;
}

/** A result an earlier run stored for the same generation key (catalog/generation-key.ts). */
export interface ReusedResult {
  /** The run that generated it: its workflow id and execution (`pixelmill/demo@<run id>`). */
  from: string;
  task_id: string | null;
  attempts: number;
  credits_cost: number;
  /** Where the images are stored now; the item's own paths may differ (another id or template). */
  images: { path: string; sha256: string; bytes: number; source_url: string }[];
  /** When the provider stops serving the result URLs (ms since the epoch), when known. */
  expires_at?: number;
}

export interface RunSettings {
  name: string;
  /** Absolute path of the manifest file. */
  manifestFile: string;
  /** The provider the run drives (absent in plans made before providers: the first API). */
  provider?: ProviderName;
  apiBaseUrl?: string;
  /** The name of the env var that holds the API key; never the key. */
  apiKeyEnv: string;
  /**
   * A fixed rate for every call together (a number in `limits.requests_per_second`, nothing
   * else): paced exactly so. With `rateCaps`, the `all` cap or 0, for messages only.
   */
  requestsPerSecond: number;
  /** Present when the rate is discovered (`auto`, the default): the manifest's numbers as caps. */
  rateCaps?: RateCaps;
  maxInFlight: number;
  budgetCredits?: number;
  /**
   * Absolute output directory. For an S3 output, the CLI's local folder of the run (retry-failed's
   * records; plan, state and report are in the bucket): `.pixelmill/s3/<bucket>/<prefix>` beside
   * the manifest, or `output.local_dir`.
   */
  outputDir: string;
  /** Set when images and reports go to an S3-compatible store (no credentials: see docs/storage.md). */
  objectStore?: S3Location;
  pathTemplate: string;
  /** `limits.task_timeout`: a task unfinished at the API after this long is given up. */
  taskTimeoutMs: number;
  /** `limits.deadline`: when nothing more is submitted, and unfinished items end as `deadline`. */
  deadline?: Deadline;
  /** `output.public_url`: where the provider fetches a local output's reference images. */
  publicUrl?: string;
  /** `output.allow_non_empty`: the local output folder may hold files of other programs. */
  allowNonEmptyOutput?: boolean;
  retry: { maxAttempts: number; on: string[] };
  /** Each image check's level (`checks` in the manifest, over DEFAULT_CHECK_LEVELS). */
  checks: CheckLevels;
  /** Present when the manifest enables webhooks; the secret itself is only ever in the environment. */
  webhooks?: { publicUrl?: string; secretEnv: string };
  /** `notify:`: where the run's notifications go (variable names; the URLs stay in the environment). */
  notify?: NotifyTarget[];
  /** What an image costs per resolution (`pricing`, else the provider's default, else the first API's credits). */
  creditsPerImage: Record<string, number>;
  /**
   * `creditsPerImage` is the manifest's `pricing`: a provider that prices each item itself
   * (ImageProvider.imageCredits: OpenAI) prices from it rather than from its documented prices.
   */
  manifestPricing?: boolean;
  /** The provider reports no cost: credits are `creditsPerImage` estimates, and reports say so. */
  creditsEstimated?: boolean;
  /**
   * `api.mode` of a provider that submits several ways (OpenAI): as the manifest says, else chosen
   * by the number of items when the manifest is loaded (resolveApiMode), with the reason.
   */
  apiMode?: ApiMode;
  apiModeReason?: string;
  /** Batch mode: images waiting in the account's batches at once (`api.max_enqueued_images`). */
  maxEnqueuedImages?: number;
  /** Batch mode: where unfinished items are generated again (`api.retry_in`). */
  retryIn?: ApiMode;
  /** Batch mode: the wait before a batch's first status call (`api.poll_interval`; batchPollWaits). */
  batchPollMs?: number;
}

/**
 * Batch mode's polling without `api.poll_interval`: the first status call 2 s after the create
 * (a batch that fails validation is known at once, and a short one, such as the embedded
 * emulator's, does not look stuck), each wait half as long again, up to BATCH_MAX_POLL_MS: about
 * 13 calls in a batch's first 10 minutes, then one every 10 minutes.
 */
export const BATCH_POLL_MS = 2_000;
/** The longest wait between two status calls of a batch. */
export const BATCH_MAX_POLL_MS = 10 * 60_000;

/** The waits of `api.poll_interval: P`: the first P, growing up to 20 P (at most 10 minutes, at least P). */
export function batchPollWaits(pollIntervalMs: number | undefined): { pollMs: number; maxPollMs: number } {
  if (pollIntervalMs === undefined) return { pollMs: BATCH_POLL_MS, maxPollMs: BATCH_MAX_POLL_MS };
  return {
    pollMs: pollIntervalMs,
    maxPollMs: Math.max(pollIntervalMs, Math.min(20 * pollIntervalMs, BATCH_MAX_POLL_MS)),
  };
}
/**
 * A batch's `limits.task_timeout` when the manifest sets none: OpenAI's completion window (24 h,
 * after which it expires the batch itself) and a little more, not the 30 minutes of a task.
 */
export const BATCH_TASK_TIMEOUT_MS = 25 * 3_600_000;

/** Runs of more items than this go to OpenAI's Batch API unless `api.mode` says otherwise. */
export const BATCH_MODE_ABOVE_ITEMS = 50;

/**
 * The mode of a provider that has several (OpenAI), once the items are known: the manifest's, else
 * batch for more than BATCH_MODE_ABOVE_ITEMS items (half the price, within 24 h), else sync.
 */
export function resolveApiMode(
  settings: RunSettings,
  itemCount: number,
  given: { pricing: boolean; taskTimeout: boolean },
): void {
  const provider = providerNamed(settings.provider);
  if (!provider.capabilities.submission) return;
  if (settings.apiMode !== undefined) {
    settings.apiModeReason = 'api.mode in the manifest';
  } else {
    const batch = itemCount > BATCH_MODE_ABOVE_ITEMS;
    settings.apiMode = batch ? 'batch' : 'sync';
    settings.apiModeReason = batch
      ? `${itemCount} items, over ${BATCH_MODE_ABOVE_ITEMS}: half the price, results within 24 h`
      : `${itemCount} items, ${BATCH_MODE_ABOVE_ITEMS} or fewer: results in seconds`;
  }
  const prices = provider.defaultCreditsPerImage?.(settings.apiMode);
  if (!given.pricing && prices) settings.creditsPerImage = prices;
  if (settings.apiMode === 'batch' && !given.taskTimeout) settings.taskTimeoutMs = BATCH_TASK_TIMEOUT_MS;
}

/** A stable id for an item without one: the same prompt and parameters give the same id. */
export function derivedItemId(item: Omit<PlannedItem, 'id'>): string {
  const canonical = JSON.stringify([
    item.prompt,
    item.model,
    item.size,
    item.resolution,
    item.n,
    item.image_urls ?? [],
    item.language ?? '',
    // Appended only when set, so that items without params keep the ids they always had.
    ...(item.params ? [item.params] : []),
  ]);
  return `item-${createHash('sha256').update(canonical).digest('hex').slice(0, 16)}`;
}

/**
 * What an output asks for, each parameter from the first of `layers` that sets it (the item, its
 * variant, `defaults`), else pixelmill's default; `params` merged key by key, the first winning.
 */
export function plannedParams(
  prompt: string,
  layers: readonly (ItemParams | undefined)[],
  defaultModel: string = providerNamed(undefined).defaultModel,
): Omit<PlannedItem, 'id'> {
  const first = <K extends keyof ItemParams>(key: K): ItemParams[K] | undefined => {
    for (const layer of layers) if (layer?.[key] !== undefined) return layer[key];
    return undefined;
  };
  const planned: Omit<PlannedItem, 'id'> = {
    prompt,
    model: first('model') ?? defaultModel,
    size: first('size') ?? DEFAULTS.size,
    resolution: first('resolution') ?? DEFAULTS.resolution,
    n: first('n') ?? DEFAULTS.n,
  };
  const imageUrls = first('image_urls');
  if (imageUrls?.length) planned.image_urls = imageUrls;
  const language = first('language');
  if (language) planned.language = language;
  let params: Record<string, unknown> | undefined;
  for (let k = layers.length - 1; k >= 0; k--)
    if (layers[k]?.params) params = { ...params, ...layers[k]!.params };
  if (params && Object.keys(params).length > 0) planned.params = params;
  return planned;
}

/**
 * `limits.requests_per_second: N` alone keeps today's fixed rate; anything else (nothing, `auto`,
 * a group's own rate) discovers the provider's rate per endpoint group, the numbers as caps.
 */
function callRates(limits: Manifest['limits']): Pick<RunSettings, 'requestsPerSecond' | 'rateCaps'> {
  const all = limits?.requests_per_second;
  const submit = limits?.submits_per_second;
  const query = limits?.queries_per_second;
  if (typeof all === 'number' && submit === undefined && query === undefined)
    return { requestsPerSecond: all };
  const rateCaps: RateCaps = {};
  if (typeof all === 'number') rateCaps.all = all;
  if (typeof submit === 'number') rateCaps.submit = submit;
  if (typeof query === 'number') rateCaps.query = query;
  return { requestsPerSecond: rateCaps.all ?? 0, rateCaps };
}

/** Credits per image of each resolution: the manifest's pricing, else the first API's (1, 2, 4). */
function creditsPerImage(pricing: Manifest['pricing']): Record<string, number> {
  const perImage = pricing?.per_image;
  if (typeof perImage === 'number') return Object.fromEntries(RESOLUTIONS.map((r) => [r, perImage]));
  if (perImage) return { ...perImage };
  const perMegapixel = pricing?.per_megapixel;
  if (perMegapixel !== undefined)
    return Object.fromEntries(
      RESOLUTIONS.map((r) => [r, Math.round(perMegapixel * MEGAPIXELS[r]! * 1e4) / 1e4]),
    );
  return { '1K': 1, '2K': 2, '4K': 4 };
}

function definedOnly<T extends object>(values: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as never;
}

/** The S3 location of a validated `s3://` output (the schema has already checked the URL). */
function s3Location(url: string, output: Exclude<Manifest['output'], string>): S3Location {
  const parsed = parseS3Url(url);
  if ('problems' in parsed) throw new Error(`invalid S3 output ${url}: ${parsed.problems.join('; ')}`);
  const location: S3Location = { bucket: parsed.bucket, prefix: parsed.prefix };
  if (output?.endpoint !== undefined) location.endpoint = output.endpoint;
  if (output?.region !== undefined) location.region = output.region;
  if (output?.force_path_style !== undefined) location.forcePathStyle = output.force_path_style;
  return location;
}

export function runSettings(manifest: Manifest, manifestFile: string, manifestDir: string): RunSettings {
  const output = typeof manifest.output === 'string' ? { dir: manifest.output } : manifest.output;
  const dir = output?.dir ?? `out/${manifest.name}`;
  const objectStore = isS3Url(dir) ? s3Location(dir, output) : undefined;
  const settings: RunSettings = {
    name: manifest.name,
    manifestFile,
    provider: manifest.api?.provider ?? DEFAULT_PROVIDER,
    apiKeyEnv: manifest.api?.api_key_env ?? DEFAULTS.apiKeyEnv,
    ...callRates(manifest.limits),
    maxInFlight: manifest.limits?.max_in_flight ?? DEFAULTS.maxInFlight,
    outputDir: objectStore
      ? output && 'local_dir' in output && output.local_dir
        ? resolve(manifestDir, output.local_dir)
        : resolve(manifestDir, '.pixelmill', 's3', objectStore.bucket, ...objectStore.prefix.split('/'))
      : resolve(manifestDir, dir),
    pathTemplate:
      output && 'path_template' in output && output.path_template
        ? output.path_template
        : DEFAULT_PATH_TEMPLATE,
    taskTimeoutMs:
      (manifest.limits?.task_timeout ? parseDuration(manifest.limits.task_timeout) : undefined) ??
      DEFAULTS.taskTimeoutMs,
    retry: {
      maxAttempts: manifest.retry?.max_attempts ?? DEFAULTS.retryMaxAttempts,
      on: manifest.retry?.on ?? DEFAULTS.retryOn,
    },
    checks: { ...DEFAULT_CHECK_LEVELS, ...definedOnly(manifest.checks ?? {}) },
    creditsPerImage: creditsPerImage(manifest.pricing),
  };
  if (manifest.pricing) settings.manifestPricing = true;
  if (manifest.api?.mode !== undefined) settings.apiMode = manifest.api.mode;
  if (manifest.api?.max_enqueued_images !== undefined)
    settings.maxEnqueuedImages = manifest.api.max_enqueued_images;
  if (manifest.api?.retry_in !== undefined) settings.retryIn = manifest.api.retry_in;
  if (manifest.api?.poll_interval !== undefined)
    settings.batchPollMs = parseDuration(manifest.api.poll_interval);
  if (!providerNamed(settings.provider).capabilities.reportsCost) settings.creditsEstimated = true;
  if (objectStore) settings.objectStore = objectStore;
  if (output && 'allow_non_empty' in output && output.allow_non_empty) settings.allowNonEmptyOutput = true;
  if (output && 'public_url' in output && output.public_url) settings.publicUrl = output.public_url;
  if (manifest.api?.base_url) settings.apiBaseUrl = manifest.api.base_url;
  if (manifest.limits?.budget_credits !== undefined) settings.budgetCredits = manifest.limits.budget_credits;
  const deadline = manifest.limits?.deadline ? parseDeadline(manifest.limits.deadline) : undefined;
  if (deadline !== undefined) settings.deadline = deadline;
  const notify = notifyTargetsOf(manifest.notify);
  if (notify) settings.notify = notify;
  if (manifest.webhooks && manifest.webhooks.enabled !== false) {
    settings.webhooks = {
      ...(manifest.webhooks.public_url ? { publicUrl: manifest.webhooks.public_url } : {}),
      secretEnv: manifest.webhooks.secret_env ?? DEFAULTS.webhookSecretEnv,
    };
  }
  return settings;
}
