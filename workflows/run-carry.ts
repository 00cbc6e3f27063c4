// An incremental run's carried items (catalog/), a few plan ranges at a time, each a carryOver
// activity that keeps, copies or fetches again what an earlier run stored. Items whose results
// cannot be had any more become shards of their own, generated after the others.
import type { RunCarriedState, ShardSpec } from '../common/types.js';
import type { ActivitiesOn } from './activities.js';
import { carryOverRanges, regenerationShards } from './run-shards.js';
import type { RunTotals } from './run-totals.js';
import type { PreparedRun } from '../common/types.js';

/** carryOver activities at once: each checks a shard's worth of carried items. */
const CARRY_OVER_LANES = 4;

type CarryProgress = NonNullable<RunCarriedState['carry']>;

export class CarryOver {
  readonly ranges: ReturnType<typeof carryOverRanges>;
  readonly progress: CarryProgress;
  /** The shard number after the carried ranges': where shards of items generated after all start. */
  readonly regenerationFirstIndex: number;
  /** Carried items may still turn out to need shards. */
  carrying: boolean;
  /** Ranges are being checked right now. */
  working: boolean;

  constructor(plan: PreparedRun, generationShardCount: number, carried: CarryProgress | undefined) {
    this.ranges = carryOverRanges(plan);
    this.progress = carried ?? { next: 0, done: this.ranges.length === 0, regenerate: [] };
    this.regenerationFirstIndex = (this.ranges.at(-1)?.shard ?? generationShardCount - 1) + 1;
    this.carrying = !this.progress.done;
    this.working = this.carrying;
  }

  /** Shards of carried items to generate after all, once every range has been checked. */
  regenerationShards(): ShardSpec[] {
    return regenerationShards(this.progress.regenerate, this.regenerationFirstIndex);
  }

  /**
   * Checks the ranges left, CARRY_OVER_LANES at a time, until done or `stop()`; returns the
   * shards to add when every range has been checked (none when stopped before).
   */
  async run(
    activities: Pick<ActivitiesOn, 'carryOver'>,
    plan: PreparedRun,
    totals: RunTotals,
    stop: () => boolean,
    told: () => void,
  ): Promise<ShardSpec[]> {
    try {
      if (!this.carrying) return [];
      const lane = async (): Promise<void> => {
        while (this.progress.next < this.ranges.length && !stop()) {
          const range = this.ranges[this.progress.next++]!;
          const summary = `carry over items[${range.offset}..${range.offset + range.count - 1}]`;
          const result = await activities.carryOver.executeWithOptions({ summary }, [
            { plan: plan.plan, ...range },
          ]);
          totals.carried(result);
          this.progress.regenerate.push(...result.regenerate);
          told();
        }
      };
      await Promise.all(Array.from({ length: Math.min(CARRY_OVER_LANES, this.ranges.length) }, lane));
      if (this.progress.next < this.ranges.length) return []; // stopped: the next execution goes on
      this.progress.done = true;
      this.carrying = false;
      return this.regenerationShards();
    } finally {
      this.working = false;
    }
  }
}
