// The run state of every run a process serves, each in its own store: local files for a local
// output (local.ts), objects under the output's prefix for an S3 output (s3.ts). A PlanRef says
// which; callers hold one RunStateStore and never choose.
import type { PlanRef } from '../common/types.js';
import type { LoadedManifest } from '../manifest/load.js';
import type { OutcomeLine } from './outcomes.js';
import type { IncrementalPlan, LoadedPlan, PlanMeta } from './plan.js';
import { LocalRunStateStore, type LocalRunStateOptions } from './local.js';
import { S3RunStateStore } from './s3.js';
import type { ItemRange, JournalCall, RunStateStore, StateLocation } from './store.js';
import type { JournalLine } from './submit-journal.js';
import type { S3ConnectionOptions } from '../storage/s3-connection.js';

export class RunStateRouter implements RunStateStore {
  readonly local: LocalRunStateStore;
  readonly s3: S3RunStateStore;

  constructor(options: LocalRunStateOptions & { s3?: S3ConnectionOptions } = {}) {
    this.local = new LocalRunStateStore(options);
    this.s3 = new S3RunStateStore(options.s3);
  }

  #for(ref: StateLocation): RunStateStore {
    return ref.objectStore ? this.s3 : this.local;
  }

  writePlan(
    manifest: LoadedManifest,
    incremental?: IncrementalPlan,
  ): Promise<{ ref: PlanRef; meta: PlanMeta }> {
    return (manifest.settings.objectStore ? this.s3 : this.local).writePlan(manifest, incremental);
  }

  readPlanMeta(ref: PlanRef): Promise<PlanMeta> {
    return this.#for(ref).readPlanMeta(ref);
  }

  readPlan(ref: PlanRef): Promise<LoadedPlan> {
    return this.#for(ref).readPlan(ref);
  }

  readPlanItems(ref: PlanRef, range: ItemRange) {
    return this.#for(ref).readPlanItems(ref, range);
  }

  readPlanItem(ref: PlanRef, index: number) {
    return this.#for(ref).readPlanItem(ref, index);
  }

  appendOutcomes(ref: PlanRef, shard: number, lines: readonly OutcomeLine[], sequence?: string) {
    return this.#for(ref).appendOutcomes(ref, shard, lines, sequence);
  }

  readOutcomes(ref: PlanRef, shard?: number, indices?: ReadonlySet<number>) {
    return this.#for(ref).readOutcomes(ref, shard, indices);
  }

  latestOutcomes(ref: PlanRef, items: readonly { id: string }[]) {
    return this.#for(ref).latestOutcomes(ref, items);
  }

  journalSubmit(ref: PlanRef, workflowId: string, line: JournalLine) {
    return this.#for(ref).journalSubmit(ref, workflowId, line);
  }

  readJournal(ref: PlanRef, workflowId: string, call?: JournalCall) {
    return this.#for(ref).readJournal(ref, workflowId, call);
  }

  close(): void {
    this.s3.close();
  }

  listPlans(state: StateLocation) {
    return this.#for(state).listPlans(state);
  }

  readCatalogIndex(state: StateLocation) {
    return this.#for(state).readCatalogIndex(state);
  }

  readCatalogIndexLines(state: StateLocation) {
    return this.#for(state).readCatalogIndexLines(state);
  }

  writeCatalogIndex(state: StateLocation, lines: Iterable<string>) {
    return this.#for(state).writeCatalogIndex(state, lines);
  }
}
