// The run's state, behind one interface: its frozen plan, the per-item outcomes of its shards and
// the journal of its submits. Activities, the CLI and the benchmarks reach run state through
// this only, so another home for it (an object store) is one more implementation, no caller
// touched. Today's is LocalRunStateStore (local.ts): files under `<output>/.pixelmill/`.
import type { PlanRef } from '../common/types.js';
import type { LoadedManifest } from '../manifest/load.js';
import type { PlannedItem } from '../manifest/normalize.js';
import type { OutcomeLine } from './outcomes.js';
import type { IncrementalPlan, LoadedPlan, PlanMeta } from './plan.js';
import type { JournalLine } from './submit-journal.js';

/** Items `offset` to `offset + count` (exclusive) of a plan, as Array.prototype.slice takes them. */
export interface ItemRange {
  offset: number;
  count: number;
}

/**
 * Every method takes the PlanRef a workflow carries. A plan that cannot be read rejects with a
 * non-retryable `PlanMissing` failure, an index outside it with `PlanIndexOutOfRange`.
 */
export interface RunStateStore {
  /**
   * Freezes `manifest` (or an incremental run's plan of it) into its plan unless a complete plan
   * for its hash is already there; the plan's meta (the existing one when reused, so the first
   * preparation stays authoritative).
   */
  writePlan(
    manifest: LoadedManifest,
    incremental?: IncrementalPlan,
  ): Promise<{ ref: PlanRef; meta: PlanMeta }>;
  /** The plan's settings alone, without its items; its hash is not checked. */
  readPlanMeta(ref: PlanRef): Promise<PlanMeta>;
  /** The whole plan: its settings and every item, in manifest order. */
  readPlan(ref: PlanRef): Promise<LoadedPlan>;
  /** The plan's settings and the items of `range`. */
  readPlanItems(ref: PlanRef, range: ItemRange): Promise<{ meta: PlanMeta; items: PlannedItem[] }>;
  /** The plan's settings and its item at `index`. */
  readPlanItem(ref: PlanRef, index: number): Promise<{ meta: PlanMeta; item: PlannedItem }>;
  /**
   * Appends outcome lines of a shard (0-based); for an item, the last line appended wins.
   * `sequence` orders appends where a store cannot append (sorted as strings; the same sequence
   * again replaces that append, so a retried writer adds nothing); default: the time.
   */
  appendOutcomes(
    ref: PlanRef,
    shard: number,
    lines: readonly OutcomeLine[],
    sequence?: string,
  ): Promise<void>;
  /**
   * The valid outcome lines of one shard, or of every shard in shard order, as appended; only
   * those of the plan indices in `indices` when given (the others are not even validated).
   */
  readOutcomes(ref: PlanRef, shard?: number, indices?: ReadonlySet<number>): Promise<OutcomeLine[]>;
  /**
   * The newest outcome of each of `items` (the plan's, by index). A line for an index whose id
   * differs is not about this plan's item: it is ignored.
   */
  latestOutcomes(ref: PlanRef, items: readonly { id: string }[]): Promise<(OutcomeLine | undefined)[]>;
  /**
   * Records in the journal of shard workflow `workflowId` that a submit call created a task. The
   * line must be durable (against the process dying) by the time this returns.
   */
  journalSubmit(ref: PlanRef, workflowId: string, line: JournalLine): Promise<void>;
  /**
   * The journal of shard workflow `workflowId`, in the order written; none before its first
   * submit. With `call`, a store may return that call's lines only.
   */
  readJournal(ref: PlanRef, workflowId: string, call?: JournalCall): Promise<Partial<JournalLine>[]>;
  /** The plans frozen in an output's state, newest first (by when their meta was written). */
  listPlans(state: StateLocation): Promise<PlanRef[]>;
  /** The text of the output's catalog index (catalog/index-file.ts), undefined when it has none. */
  readCatalogIndex(state: StateLocation): Promise<string | undefined>;
  /**
   * The output's catalog index line by line (in batches), undefined when it has none: what a
   * reader of a big catalog uses, which never holds the whole text (catalog/index-file.ts).
   */
  readCatalogIndexLines(state: StateLocation): Promise<AsyncIterable<string[]> | undefined>;
  /** Replaces the output's catalog index, all at once. */
  writeCatalogIndex(state: StateLocation, lines: Iterable<string>): Promise<void>;
}

/** A plan's meta file (or object) in an output's state: `plan-<hash16>.json`. */
export const PLAN_META_NAME = /^plan-[0-9a-f]{16}\.json$/;

/** The catalog index's file (or object) in an output's state. */
export const CATALOG_INDEX_FILE = 'catalog.jsonl';

/** Where an output's run state is, before or without a plan. */
export type StateLocation = Pick<PlanRef, 'stateDir' | 'objectStore'>;

/** One submit call in the journal: the shard workflow's run and the activity. */
export interface JournalCall {
  run: string;
  activity: string;
  /** The calls a submitSlice activity made for its items (`<activity>/<plan index>`), not its own. */
  items?: boolean;
}
