// The inputs a benchmark feeds pixelmill, written the way a catalog team would: an items file
// (JSONL, streamed so 100,000 rows cost no memory to speak of) and a manifest pointing at it; and
// the catalog index a finished run would have left, for `plan` to compare a manifest against.
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { stringify } from 'yaml';
import { generationKey } from '../catalog/generation-key.js';
import { catalogHeader, catalogIndexLines, type CatalogEntry } from '../catalog/index-file.js';
import type { LoadedManifest } from '../manifest/load.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { CATALOG_INDEX_FILE, STATE_DIR_NAME } from '../runstate/index.js';

export function benchItemId(index: number): string {
  return `item-${String(index).padStart(6, '0')}`;
}

export function benchPrompt(index: number): string {
  return `bench product ${index}: a ceramic mug on a white background, studio light`;
}

/**
 * Writes `items.jsonl` with `count` rows into `dir`; resolves with its file name. The prompts of
 * items `edited` says are rewritten (a catalog team's edits, for the incremental benchmark).
 */
export async function writeItemsFile(
  dir: string,
  count: number,
  edited: (index: number) => boolean = () => false,
): Promise<string> {
  const name = 'items.jsonl';
  const out = createWriteStream(join(dir, name));
  for (let i = 1; i <= count; i++) {
    const prompt = edited(i) ? `${benchPrompt(i)}, in warm evening light` : benchPrompt(i);
    const line = `${JSON.stringify({ id: benchItemId(i), prompt })}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await finished(out);
  return name;
}

export interface ManifestSpec {
  name: string;
  itemsFile: string;
  /** `limits.requests_per_second`; left out, the manifest names no rate and pixelmill discovers it. */
  requestsPerSecond?: number;
  /** `limits.max_in_flight`; left out, pixelmill's default. */
  maxInFlight?: number;
  /** Extra top-level blocks (e.g. `webhooks`), written as given. */
  extra?: Record<string, unknown>;
  /** `output`, as the manifest says it; default `./out`. */
  output?: unknown;
}

/** Writes `manifest.yaml` into `dir` (output under `dir/out` unless given); returns its path. */
export function writeManifest(dir: string, spec: ManifestSpec): string {
  const file = join(dir, 'manifest.yaml');
  const manifest = {
    name: spec.name,
    description: 'written by the pixelmill benchmark',
    limits: {
      ...(spec.requestsPerSecond !== undefined ? { requests_per_second: spec.requestsPerSecond } : {}),
      ...(spec.maxInFlight !== undefined ? { max_in_flight: spec.maxInFlight } : {}),
    },
    output: spec.output ?? './out',
    items_file: spec.itemsFile,
    ...spec.extra,
  };
  writeFileSync(file, stringify(manifest));
  return file;
}

export interface CatalogIndexSpec {
  catalog: string;
  /** The run every entry was made and last used by (`pixelmill/<name>@<execution>`). */
  run: string;
  /** Where an item's one image is stored, relative to the output folder. */
  imagePath: (item: PlannedItem) => string;
  /** Where the API served it. */
  sourceUrl: (item: PlannedItem) => string;
}

/**
 * The catalog index a finished run of `loaded` leaves in `outputDir`: every item made, one image
 * each, the image a small file on disk (the plan reads its size, not its bytes).
 */
export function writeCatalogIndex(outputDir: string, loaded: LoadedManifest, spec: CatalogIndexSpec): void {
  const stateDir = join(outputDir, STATE_DIR_NAME);
  mkdirSync(stateDir, { recursive: true });
  const folders = new Set<string>();
  const entries: CatalogEntry[] = loaded.items.map((item) => {
    const path = spec.imagePath(item);
    const bytes = Buffer.from(`image of ${item.id}`);
    const file = join(outputDir, path);
    if (!folders.has(dirname(file))) {
      mkdirSync(dirname(file), { recursive: true });
      folders.add(dirname(file));
    }
    writeFileSync(file, bytes);
    return {
      key: generationKey(item),
      id: item.id,
      images: [{ path, sha256: '0'.repeat(64), bytes: bytes.length, source_url: spec.sourceUrl(item) }],
      task_id: `task-${item.id}`,
      attempts: 1,
      credits_cost: 1,
      made_by: spec.run,
      used_by: spec.run,
    };
  });
  const header = catalogHeader({
    catalog: spec.catalog,
    run: spec.run,
    manifest_hash: loaded.hash,
    items: entries.length,
    finished_at: new Date().toISOString(),
  });
  writeFileSync(join(stateDir, CATALOG_INDEX_FILE), [...catalogIndexLines({ header, entries })].join(''));
}
