// The catalog index a run leaves in its output (catalog/update-index.ts), prepared with its report:
// summary.json says what was generated, carried over and removed; the index itself is written
// last, once the report is out, after `--prune` has deleted what no item uses any more.
import { parseCatalogIndex, catalogIndexLines } from '../catalog/index-file.js';
import { rebuildCatalogIndex } from '../catalog/rebuild-index.js';
import { updatedIndex } from '../catalog/update-index.js';
import { runWorkflowId } from '../common/names.js';
import type { WriteReportInput } from '../common/types.js';
import type { RunRates } from '../governor/types.js';
import type { PlannedItem } from '../manifest/normalize.js';
import type { CatalogSummary } from '../report/write-report.js';
import type { OutcomeLine, PlanMeta, RunStateStore } from '../runstate/index.js';
import type { ResultStore } from '../storage/result-store.js';

/** summary.json lists this many removed ids at most (all are counted). */
const REMOVED_IDS_LISTED = 1_000;

export interface CatalogSources {
  meta: PlanMeta;
  items: readonly PlannedItem[];
  outcomes: readonly (OutcomeLine | undefined)[];
  input: WriteReportInput;
}

/**
 * The catalog's part of a report, or undefined for a run that is not the catalog's own: a
 * retry-failed run's items are a few of the catalog's, folded into its report (and index) by
 * `pixelmill report`, which writes as the catalog's run.
 */
export async function catalogUpdate(runState: RunStateStore, sources: CatalogSources) {
  const { meta, items, outcomes, input } = sources;
  if (input.runId !== runWorkflowId(meta.name)) return undefined;
  const run = `${input.runId}@${input.execution ?? 'unknown'}`;
  const text = await runState.readCatalogIndex(input.plan);
  const found =
    text === undefined
      ? (await rebuildCatalogIndex(runState, input.plan, meta.name, input.plan))?.index
      : parseCatalogIndex(text);
  // Another catalog's index (a renamed manifest, a reused folder) says nothing about this one.
  const previous = found?.header.catalog === meta.name ? found : undefined;
  const update = updatedIndex({
    previous,
    header: {
      catalog: meta.name,
      run,
      manifest_hash: meta.manifestHash ?? meta.hash,
      finished_at: new Date().toISOString(),
      ...(input.generationMs !== undefined ? { generation_ms: input.generationMs } : {}),
    },
    items,
    outcomes,
    prune: meta.prune ?? false,
  });
  const carried = input.carryOver;
  const reused = outcomes.filter((line) => line?.reused_from !== undefined).length;
  const summary: CatalogSummary = {
    basis: meta.basis ?? previous?.header.run ?? null,
    generated: outcomes.filter((line) => line?.status === 'completed' && line.reused_from === undefined)
      .length,
    reused,
    restored: carried?.restored ?? 0,
    moved: carried?.moved ?? 0,
    regenerated: carried?.regenerated ?? 0,
    removed: update.removed.length,
    removed_ids: update.removed.slice(0, REMOVED_IDS_LISTED).map((entry) => entry.id),
    pruned: meta.prune ?? false,
  };
  return {
    summary,
    /** Deletes what pruning drops, then replaces the index, with the rate the run ended at. */
    write: async (store: ResultStore, rates: RunRates | undefined): Promise<void> => {
      if (meta.prune && update.toDelete.length > 0) await store.remove(update.toDelete);
      const submitRate = rates?.mode === 'fixed' ? rates.requestsPerSecond : rates?.submit.perSecond;
      const { index } = update;
      if (submitRate !== undefined && submitRate > 0) index.header.submit_rate = submitRate;
      await runState.writeCatalogIndex(input.plan, catalogIndexLines(index));
    },
  };
}
