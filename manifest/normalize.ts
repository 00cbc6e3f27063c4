// From a validated manifest to what a run works with: every item with its parameters resolved
// and a stable id, and the run settings with their defaults filled in.
import { createHash } from 'node:crypto';
import { isAbsolute, resolve } from 'node:path';
import { DEFAULT_MODEL, type Language, type Resolution } from '../api/schemas.js';
import { DEFAULT_PATH_TEMPLATE, type ItemParams, type Manifest, type ManifestItem } from './schema.js';

export const DEFAULTS = {
  size: '1:1',
  resolution: '1K' as Resolution,
  n: 1,
  apiKeyEnv: 'PIXELMILL_API_KEY',
  requestsPerSecond: 5,
  maxInFlight: 500,
  retryMaxAttempts: 3,
  /** Random generation failures are worth another try; content-policy refusals are not. */
  retryOn: ['generation_error'],
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
}

export interface RunSettings {
  name: string;
  /** Absolute path of the manifest file. */
  manifestFile: string;
  apiBaseUrl?: string;
  /** The name of the env var that holds the API key; never the key. */
  apiKeyEnv: string;
  requestsPerSecond: number;
  maxInFlight: number;
  budgetCredits?: number;
  /** Absolute output directory. */
  outputDir: string;
  pathTemplate: string;
  retry: { maxAttempts: number; on: string[] };
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
  ]);
  return `item-${createHash('sha256').update(canonical).digest('hex').slice(0, 16)}`;
}

export function planItem(item: ManifestItem, defaults: ItemParams | undefined): PlannedItem {
  const planned: Omit<PlannedItem, 'id'> = {
    prompt: item.prompt,
    model: item.model ?? defaults?.model ?? DEFAULT_MODEL,
    size: item.size ?? defaults?.size ?? DEFAULTS.size,
    resolution: item.resolution ?? defaults?.resolution ?? DEFAULTS.resolution,
    n: item.n ?? defaults?.n ?? DEFAULTS.n,
  };
  const imageUrls = item.image_urls ?? defaults?.image_urls;
  if (imageUrls?.length) planned.image_urls = imageUrls;
  const language = item.language ?? defaults?.language;
  if (language) planned.language = language;
  return { id: item.id ?? derivedItemId(planned), ...planned };
}

export function runSettings(manifest: Manifest, manifestFile: string, manifestDir: string): RunSettings {
  const output = typeof manifest.output === 'string' ? { dir: manifest.output } : manifest.output;
  const dir = output?.dir ?? `out/${manifest.name}`;
  const settings: RunSettings = {
    name: manifest.name,
    manifestFile,
    apiKeyEnv: manifest.api?.api_key_env ?? DEFAULTS.apiKeyEnv,
    requestsPerSecond: manifest.limits?.requests_per_second ?? DEFAULTS.requestsPerSecond,
    maxInFlight: manifest.limits?.max_in_flight ?? DEFAULTS.maxInFlight,
    outputDir: isAbsolute(dir) ? dir : resolve(manifestDir, dir),
    pathTemplate:
      output && 'path_template' in output && output.path_template
        ? output.path_template
        : DEFAULT_PATH_TEMPLATE,
    retry: {
      maxAttempts: manifest.retry?.max_attempts ?? DEFAULTS.retryMaxAttempts,
      on: manifest.retry?.on ?? DEFAULTS.retryOn,
    },
  };
  if (manifest.api?.base_url) settings.apiBaseUrl = manifest.api.base_url;
  if (manifest.limits?.budget_credits !== undefined) settings.budgetCredits = manifest.limits.budget_credits;
  return settings;
}
