// Public entry of the run state: the RunStateStore interface, today's local-disk implementation,
// and the formats its callers read (plan meta, outcome and journal lines). Code outside runstate/
// imports from here; only tests look at the local files' layout directly.
export { LocalRunStateStore, type LocalRunStateOptions } from './local.js';
export type { ItemRange, RunStateStore } from './store.js';
export { writeFileAtomic } from './files.js';
export type { ImageRecord, OutcomeLine } from './outcomes.js';
export {
  estimatedCredits,
  planIndexOutOfRange,
  STATE_DIR_NAME,
  stateDirOf,
  type LoadedPlan,
  type PlanMeta,
} from './plan.js';
export { readSubmitJournals, type JournalLine } from './submit-journal.js';
