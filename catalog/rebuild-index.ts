// An output whose catalog index is gone (deleted by hand, or written by a version without one):
// the index as the catalog's runs would have left it, their frozen plans and outcomes replayed
// oldest first, so that results an item dropped earlier still belong to the catalog and `--prune`
// still finds them. Like any index it is a guide: what is really stored is checked by its reader.
import type { PlanRef } from '../common/types.js';
import type { RunStateStore, StateLocation } from '../runstate/index.js';
import type { CatalogIndex } from './index-file.js';
import { updatedIndex } from './update-index.js';

/** A retry-failed run's plan (`retry-N.yaml`): a few of the catalog's items, not the catalog. */
const RETRY_MANIFEST = /[/\\]retry-\d+\.yaml$/;

export interface RebuiltIndex {
  index: CatalogIndex;
  /** How many runs of the catalog it was rebuilt from. */
  runs: number;
}

export async function rebuildCatalogIndex(
  runState: RunStateStore,
  state: StateLocation,
  catalog: string,
  /** A plan left out: the run whose report is being written is not its own basis. */
  except?: PlanRef,
): Promise<RebuiltIndex | undefined> {
  let index: CatalogIndex | undefined;
  let runs = 0;
  for (const ref of (await runState.listPlans(state)).reverse()) {
    if (ref.planHash === except?.planHash) continue;
    const { meta, items } = await runState.readPlan(ref);
    if (meta.name !== catalog || RETRY_MANIFEST.test(meta.manifestFile)) continue;
    const outcomes = await runState.latestOutcomes(ref, items);
    if (!outcomes.some((line) => line?.status === 'completed')) continue;
    index = updatedIndex({
      previous: index,
      header: {
        catalog,
        run: `plan-${ref.planHash.slice(0, 16)}`,
        manifest_hash: meta.manifestHash ?? meta.hash,
        finished_at: new Date().toISOString(),
      },
      items,
      outcomes,
      prune: meta.prune ?? false,
    }).index;
    runs++;
  }
  return index ? { index, runs } : undefined;
}
