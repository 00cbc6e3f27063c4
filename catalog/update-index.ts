// The catalog index a run leaves behind (index-file.ts): its completed items by generation key,
// plus the earlier entries whose files are still theirs, so that an item removed now and put
// back later is still found. With `--prune`, results no item uses any more (removed now or
// earlier) are dropped and their files deleted, never a file a current item uses. Pure: the
// report activity reads and writes.
import type { PlannedItem } from '../manifest/normalize.js';
import type { OutcomeLine } from '../runstate/index.js';
import { generationKey } from './generation-key.js';
import { catalogHeader, type CatalogEntry, type CatalogHeader, type CatalogIndex } from './index-file.js';

export interface IndexUpdate {
  previous: CatalogIndex | undefined;
  header: Omit<CatalogHeader, 'format' | 'items'>;
  items: readonly PlannedItem[];
  /** The newest outcome of each item, by plan index. */
  outcomes: readonly (OutcomeLine | undefined)[];
  prune: boolean;
}

export interface UpdatedIndex {
  index: CatalogIndex;
  /** Results of the previous run that no item uses any more (ids and keys both gone). */
  removed: CatalogEntry[];
  /**
   * Files to delete when pruning: those of every result no item uses any more, and the old copies
   * of results moved to new paths; never a current item's file.
   */
  toDelete: string[];
}

export function updatedIndex(update: IndexUpdate): UpdatedIndex {
  const { previous, header } = update;
  const current = new Map<string, CatalogEntry>();
  const ids = new Set<string>();
  const keys = new Set<string>();
  const pathsInUse = new Set<string>();
  for (const [index, item] of update.items.entries()) {
    const key = generationKey(item);
    ids.add(item.id);
    keys.add(key);
    const outcome = update.outcomes[index];
    for (const image of outcome?.images ?? []) pathsInUse.add(image.path);
    if (outcome?.status !== 'completed' || outcome.images.length === 0 || current.has(key)) continue;
    current.set(key, entryOf(key, item, outcome, header.run));
  }
  const removed = (previous?.entries ?? []).filter(
    (entry) => entry.used_by === previous?.header.run && !ids.has(entry.id) && !keys.has(entry.key),
  );
  const pruned = new Set(
    update.prune ? (previous?.entries ?? []).filter((entry) => !keys.has(entry.key)) : [],
  );
  // An earlier entry stays while its files are its own: a current item stored at one of its
  // paths has replaced that file.
  const kept = (previous?.entries ?? []).filter(
    (entry) =>
      !current.has(entry.key) &&
      !pruned.has(entry) &&
      entry.images.every((image) => !pathsInUse.has(image.path)),
  );
  // Pruning also deletes the old copies of results a new path template or id moved.
  const dropped = (previous?.entries ?? []).filter((entry) => update.prune && !kept.includes(entry));
  const toDelete = dropped.flatMap((entry) =>
    entry.images.map((image) => image.path).filter((path) => !pathsInUse.has(path)),
  );
  return {
    index: {
      header: catalogHeader({ ...header, items: update.items.length }),
      entries: [...current.values(), ...kept],
    },
    removed,
    toDelete: [...new Set(toDelete)],
  };
}

/**
 * A carried item keeps where its result came from (unless it had to be generated after all); its
 * images are where they are stored now.
 */
function entryOf(key: string, item: PlannedItem, outcome: OutcomeLine, run: string): CatalogEntry {
  const made = outcome.reused_from !== undefined ? item.reuse : undefined;
  const expiresAt = outcome.expires_at ?? made?.expires_at;
  return {
    key,
    id: item.id,
    images: outcome.images,
    task_id: made ? made.task_id : outcome.task_id,
    attempts: made ? made.attempts : outcome.attempts,
    credits_cost: made ? made.credits_cost : outcome.credits_cost,
    made_by: made ? made.from : run,
    used_by: run,
    ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}),
  };
}
