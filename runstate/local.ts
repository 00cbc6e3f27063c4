// Run state on local disk, under `<output>/.pixelmill/` (the PlanRef's state dir): the plan files
// (plan.ts), the outcome files (outcomes.ts) and the submit journals (submit-journal.ts), in the
// format every existing run directory has. Plans are read once per store (plan-cache.ts).
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { PlanRef } from '../common/types.js';
import type { LoadedManifest } from '../manifest/load.js';
import {
  appendOutcomes,
  latestOutcomes,
  listOutcomeFiles,
  readOutcomeFile,
  shardOutcomesFile,
  type OutcomeLine,
} from './outcomes.js';
import { readPlanFiles, readPlanMeta, writePlanOnce, type IncrementalPlan, type PlanMeta } from './plan.js';
import { PlanCache } from './plan-cache.js';
import {
  CATALOG_INDEX_FILE,
  PLAN_META_NAME,
  type ItemRange,
  type RunStateStore,
  type StateLocation,
} from './store.js';
import { fileLines, writeFileAtomic } from './files.js';
import { appendJournalLine, readJournal, type JournalLine } from './submit-journal.js';

export interface LocalRunStateOptions {
  /** Plans kept parsed in memory; default 4 (a worker serves a few runs at once). */
  planCacheSize?: number;
}

export class LocalRunStateStore implements RunStateStore {
  readonly #plans: PlanCache;

  constructor(options: LocalRunStateOptions = {}) {
    this.#plans = new PlanCache(readPlanFiles, readPlanMeta, options.planCacheSize);
  }

  writePlan(
    manifest: LoadedManifest,
    incremental?: IncrementalPlan,
  ): Promise<{ ref: PlanRef; meta: PlanMeta }> {
    return writePlanOnce(manifest, incremental);
  }

  readPlanMeta(ref: PlanRef): Promise<PlanMeta> {
    return this.#plans.meta(ref);
  }

  readPlan(ref: PlanRef) {
    return this.#plans.get(ref);
  }

  async readPlanItems(ref: PlanRef, range: ItemRange) {
    const { meta, items } = await this.#plans.get(ref);
    return { meta, items: items.slice(range.offset, range.offset + range.count) };
  }

  async readPlanItem(ref: PlanRef, index: number) {
    const { plan, item } = await this.#plans.item(ref, index);
    return { meta: plan.meta, item };
  }

  appendOutcomes(ref: PlanRef, shard: number, lines: readonly OutcomeLine[]): Promise<void> {
    return appendOutcomes(ref, shard, lines);
  }

  async readOutcomes(ref: PlanRef, shard?: number, indices?: ReadonlySet<number>): Promise<OutcomeLine[]> {
    if (shard !== undefined) return readOutcomeFile(shardOutcomesFile(ref, shard), indices);
    const lines: OutcomeLine[] = [];
    for (const file of await listOutcomeFiles(ref)) lines.push(...(await readOutcomeFile(file, indices)));
    return lines;
  }

  latestOutcomes(ref: PlanRef, items: readonly { id: string }[]) {
    return latestOutcomes(ref, items);
  }

  /** Written synchronously, before this returns: see submit-journal.ts. */
  async journalSubmit(ref: PlanRef, workflowId: string, line: JournalLine): Promise<void> {
    appendJournalLine(ref.stateDir, workflowId, line);
  }

  readJournal(ref: PlanRef, workflowId: string) {
    return readJournal(ref.stateDir, workflowId);
  }

  async listPlans(state: StateLocation): Promise<PlanRef[]> {
    let names: string[];
    try {
      names = (await readdir(state.stateDir)).filter((name) => PLAN_META_NAME.test(name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const plans = await Promise.all(
      names.map(async (name) => {
        const file = join(state.stateDir, name);
        const meta = JSON.parse(await readFile(file, 'utf8')) as PlanMeta;
        return { ref: { stateDir: state.stateDir, planHash: meta.hash }, at: (await stat(file)).mtimeMs };
      }),
    );
    return plans.sort((a, b) => b.at - a.at).map((plan) => plan.ref);
  }

  async readCatalogIndex(state: StateLocation): Promise<string | undefined> {
    try {
      return await readFile(join(state.stateDir, CATALOG_INDEX_FILE), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async readCatalogIndexLines(state: StateLocation): Promise<AsyncIterable<string[]> | undefined> {
    try {
      return fileLines(await open(join(state.stateDir, CATALOG_INDEX_FILE), 'r'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  writeCatalogIndex(state: StateLocation, lines: Iterable<string>): Promise<void> {
    return writeFileAtomic(join(state.stateDir, CATALOG_INDEX_FILE), lines);
  }
}
