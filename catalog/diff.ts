// What an edited manifest changes against the catalog its output holds: each item is new,
// changed (its id had another generation key in the last run), unchanged (its key is stored:
// carried over, copied where its id or the path template now puts it), to restore (its key was
// stored but the file is gone or altered, and the provider may still serve it), or to regenerate
// (gone, and the result URL has expired). Items of the last run whose id and key are both gone
// were removed; stored results no item uses (those, and older ones) are what --prune deletes.
// Pure: what is stored comes in as a lookup, checked by the caller.
import type { PlannedItem, ReusedResult } from '../manifest/normalize.js';
import { generationKey } from './generation-key.js';
import type { CatalogEntry, CatalogHeader, CatalogIndex } from './index-file.js';

/** A result URL this close to its expiry is not worth trying: the item is generated again. */
export const RESTORE_MARGIN_MS = 10 * 60_000;

export interface DiffCounts {
  new: number;
  changed: number;
  unchanged: number;
  /** Of the unchanged: stored under another id or path, copied to the item's own. */
  moved: number;
  restore: number;
  regenerate: number;
  removed: number;
  /** Stored results no item of the manifest uses (the removed, and older ones): what --prune deletes. */
  unused: number;
}

export interface CatalogDiff {
  /** The run the output's index was written by; undefined when the output holds no catalog. */
  basis?: CatalogHeader;
  counts: DiffCounts;
  /**
   * The items to generate, in manifest order, each with its `position`; with no stored catalog,
   * the manifest's items as they are (nothing is carried over, so no incremental plan needs one).
   */
  generate: PlannedItem[];
  /** The items carried over (unchanged or to restore), in manifest order, each with its `reuse`. */
  carried: PlannedItem[];
  /** Results of the last run that no item of the manifest uses any more. */
  removed: CatalogEntry[];
}

export interface DiffInput {
  items: readonly PlannedItem[];
  /** Each item's generation key, when the caller has them already; computed otherwise. */
  keys?: readonly string[];
  index: CatalogIndex | undefined;
  /** The size of what is stored at `path` (relative to the output), undefined when nothing is. */
  storedBytes: (path: string) => number | undefined;
  /** Where `item`'s images go (one path per image), given the stored result it reuses. */
  pathsOf: (item: PlannedItem, entry: CatalogEntry) => string[];
  now: number;
}

function reuseOf(entry: CatalogEntry): ReusedResult {
  return {
    from: entry.made_by,
    task_id: entry.task_id,
    attempts: entry.attempts,
    credits_cost: entry.credits_cost,
    images: entry.images,
    ...(entry.expires_at !== undefined ? { expires_at: entry.expires_at } : {}),
  };
}

export function diffCatalog(input: DiffInput): CatalogDiff {
  const { index, now } = input;
  const counts: DiffCounts = {
    new: 0,
    changed: 0,
    unchanged: 0,
    moved: 0,
    restore: 0,
    regenerate: 0,
    removed: 0,
    unused: 0,
  };
  const generate: PlannedItem[] = [];
  const carried: PlannedItem[] = [];
  const byKey = new Map<string, CatalogEntry>();
  const lastRunIds = new Set<string>();
  if (index === undefined) {
    // Nothing is stored: every item is new, and no key needs computing.
    counts.new = input.items.length;
    return { counts, generate: [...input.items], carried, removed: [] };
  }
  for (const entry of index.entries) {
    if (!byKey.has(entry.key)) byKey.set(entry.key, entry);
    if (entry.used_by === index.header.run) lastRunIds.add(entry.id);
  }
  const keys = new Set<string>();
  const ids = new Set<string>();
  for (const [position, item] of input.items.entries()) {
    const key = input.keys?.[position] ?? generationKey(item);
    keys.add(key);
    ids.add(item.id);
    const entry = byKey.get(key);
    if (entry === undefined) {
      counts[lastRunIds.has(item.id) ? 'changed' : 'new']++;
      generate.push({ ...item, position });
      continue;
    }
    const intact = entry.images.every((image) => input.storedBytes(image.path) === image.bytes);
    if (intact) {
      counts.unchanged++;
      const paths = input.pathsOf(item, entry);
      if (paths.some((path, k) => path !== entry.images[k]?.path)) counts.moved++;
    } else if (entry.expires_at === undefined || entry.expires_at > now + RESTORE_MARGIN_MS) {
      counts.restore++;
    } else {
      counts.regenerate++;
      generate.push({ ...item, position });
      continue;
    }
    carried.push({ ...item, position, reuse: reuseOf(entry) });
  }
  const removed = index.entries.filter(
    (entry) => entry.used_by === index.header.run && !ids.has(entry.id) && !keys.has(entry.key),
  );
  counts.removed = removed.length;
  // An older version of a changed item is replaced by its new image, not left unused.
  counts.unused = index.entries.filter((entry) => !keys.has(entry.key) && !ids.has(entry.id)).length;
  return { basis: index.header, counts, generate, carried, removed };
}
