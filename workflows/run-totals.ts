// What a run's shards have done, as they tell it: the finished shards' results, the running
// shards' last progress, and the budget not yet handed out. Pure bookkeeping for run.ts,
// unit-tested without a server (test/run-totals.test.ts).
import type {
  CarryOverOutput,
  CarryOverTotals,
  FinishedTotals,
  HandedSlots,
  ItemCounts,
  RunTotalsState,
  ShardHandoff,
  ShardProgress,
  ShardResult,
} from '../common/types.js';
import { addTotals, normalizeCounts, zeroApiCalls, zeroCounts } from '../common/item-counts.js';
import { addBatchTotals } from '../common/batch-totals.js';
import type { BatchTotals } from '../common/batch-types.js';

export class RunTotals {
  readonly finished: FinishedTotals = {
    counts: zeroCounts(),
    creditsSpent: 0,
    apiCalls: zeroApiCalls(),
    images: 0,
    tasksGivenUp: 0,
    tasksRejected: 0,
    creditsRejected: 0,
  };
  /** Items the deadline left unfinished. */
  endedByDeadline = 0;
  /**
   * The lookup pace the last finished shard settled on. A new shard starts there rather than at
   * the minimum: its first lookups would otherwise come before any task could have finished.
   */
  learnedPollMs: number | undefined;
  /** The generation times the last shard to hand off saw: where new shards' lookups start. */
  learnedGenerationMs: number[] | undefined;
  /** The slots the last shard to hand off held at a provider that refuses over its concurrency. */
  learnedSlots: HandedSlots | undefined;
  /** The last progress each running shard told (shardProgressSignal), by shard index. */
  readonly #told = new Map<number, ShardProgress>();
  /** Budget not yet handed to a shard; a finished shard gives back what it did not spend. */
  #unallocated: number | undefined;

  constructor(budgetCredits: number | undefined) {
    this.#unallocated = budgetCredits;
  }

  /** The totals an earlier execution of the run carried over (state()). */
  static restore(carried: RunTotalsState): RunTotals {
    const totals = new RunTotals(carried.unallocated);
    Object.assign(totals.finished, carried.finished);
    totals.endedByDeadline = carried.endedByDeadline;
    totals.learnedPollMs = carried.learnedPollMs;
    totals.learnedGenerationMs = carried.learnedGenerationMs;
    totals.learnedSlots = carried.learnedSlots;
    totals.carryOver = carried.carryOver;
    for (const progress of carried.told) totals.told(progress);
    return totals;
  }

  /** Everything, for continue-as-new. */
  state(): RunTotalsState {
    return {
      finished: this.snapshot(),
      endedByDeadline: this.endedByDeadline,
      ...(this.learnedPollMs !== undefined ? { learnedPollMs: this.learnedPollMs } : {}),
      ...(this.learnedGenerationMs !== undefined ? { learnedGenerationMs: this.learnedGenerationMs } : {}),
      ...(this.learnedSlots !== undefined ? { learnedSlots: this.learnedSlots } : {}),
      told: [...this.#told.values()],
      ...(this.#unallocated !== undefined ? { unallocated: this.#unallocated } : {}),
      ...(this.carryOver ? { carryOver: { ...this.carryOver } } : {}),
    };
  }

  /** The credits shard may commit: its planned share, or what is left if less. Undefined: no budget. */
  allocate(plannedCredits: number | undefined): number | undefined {
    if (this.#unallocated === undefined) return undefined;
    const allowance = Math.max(0, Math.min(this.#unallocated, plannedCredits ?? this.#unallocated));
    this.#unallocated -= allowance;
    return allowance;
  }

  told(progress: ShardProgress): void {
    this.#told.set(progress.shard, progress);
  }

  /** A shard's result, with the allowance it was given. */
  shardFinished(shard: number, result: ShardResult, allowance: number | undefined): void {
    this.#told.delete(shard);
    const { finished } = this;
    addTotals(finished.counts, normalizeCounts(result.counts));
    addTotals(finished.apiCalls, result.apiCalls);
    finished.creditsSpent += result.creditsSpent;
    finished.images += result.images;
    finished.tasksGivenUp += result.tasksGivenUp ?? 0;
    finished.tasksRejected += result.tasksRejected ?? 0;
    finished.creditsRejected += result.creditsRejected ?? 0;
    if (this.#unallocated !== undefined && allowance !== undefined)
      this.#unallocated += allowance - result.creditsSpent;
    if (result.batches) finished.batches = addBatchTotals(finished.batches, result.batches);
    if (result.pollMs !== undefined) this.learnedPollMs = result.pollMs;
    this.endedByDeadline += result.endedByDeadline ?? 0;
  }

  /** What a shard's hand-off taught (ShardHandoff): where the run's next shards start. */
  learn({ generationMs, slots }: Pick<ShardHandoff, 'generationMs' | 'slots'>): void {
    if (generationMs) this.learnedGenerationMs = generationMs;
    if (slots) this.learnedSlots = slots;
  }

  /** What the finished shards did, plus what the running ones last told (batches: batch mode's). */
  sofar(): { counts: ItemCounts; credits: number; tasksRejected: number; batches?: BatchTotals } {
    const counts = { ...this.finished.counts };
    let credits = this.finished.creditsSpent;
    let tasksRejected = this.finished.tasksRejected;
    let batches = this.finished.batches;
    for (const shard of this.#told.values()) {
      addTotals(counts, shard.counts);
      credits += shard.creditsSpent;
      tasksRejected += shard.tasksRejected ?? 0;
      if (shard.batches) batches = addBatchTotals(batches, shard.batches);
    }
    return { counts, credits, tasksRejected, ...(batches ? { batches } : {}) };
  }

  /** An incremental run's carried items: completed when carried, the rest generated after all. */
  carryOver: CarryOverTotals | undefined = undefined;

  startCarryOver(items: number): void {
    this.carryOver = { items, reused: 0, restored: 0, moved: 0, regenerated: 0 };
  }

  carried(result: CarryOverOutput): void {
    const totals = (this.carryOver ??= { items: 0, reused: 0, restored: 0, moved: 0, regenerated: 0 });
    totals.reused += result.reused;
    totals.restored += result.restored;
    totals.moved += result.moved;
    totals.regenerated += result.regenerate.length;
    this.finished.counts.completed += result.reused;
  }

  /** A copy for the progress query. */
  snapshot(): FinishedTotals {
    const { finished } = this;
    return {
      ...finished,
      counts: { ...finished.counts },
      apiCalls: { ...finished.apiCalls },
      ...(finished.batches ? { batches: addBatchTotals(finished.batches, undefined) } : {}),
    };
  }
}
