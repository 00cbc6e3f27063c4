// Public entry of the run state: the RunStateStore interface, its local-disk and S3 implementations
// and the router that picks one per run, and the formats its callers read (plan meta, outcome and
// journal lines). Code outside runstate/ imports from here; only tests look at the layouts directly.
export { LocalRunStateStore, type LocalRunStateOptions } from './local.js';
export { RunStateRouter } from './router.js';
export { S3RunStateStore } from './s3.js';
export {
  CATALOG_INDEX_FILE,
  type ItemRange,
  type JournalCall,
  type RunStateStore,
  type StateLocation,
} from './store.js';
export { parseJsonLines, writeFileAtomic } from './files.js';
export { ImageRecordSchema, type ImageRecord, type OutcomeLine } from './outcomes.js';
export {
  DEFAULT_CREDITS_PER_IMAGE,
  estimatedCredits,
  planIndexOutOfRange,
  shardCredits,
  STATE_DIR_NAME,
  stateDirOf,
  type IncrementalPlan,
  type LoadedPlan,
  type PlanMeta,
} from './plan.js';
export { readSubmitJournals, type JournalLine } from './submit-journal.js';
