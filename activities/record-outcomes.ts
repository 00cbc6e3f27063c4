// The recordOutcomes activity: an adapter from a shard's final outcomes to the run state's
// outcome lines (runstate/outcomes.ts).
import { SHARD_SIZE } from '../common/names.js';
import type { RecordOutcomesInput } from '../common/types.js';
import { activityContext, appendSequence } from './context.js';
import { planIndexOutOfRange, type OutcomeLine, type RunStateStore } from '../runstate/index.js';

/**
 * recordOutcomes: the final lines of items that did not end with stored images. Images that
 * storeResults did store for the same task (before its URL expired, say) stay in the item's line.
 */
export function recordOutcomesActivity(runState: RunStateStore) {
  return async function recordOutcomes(input: RecordOutcomesInput): Promise<void> {
    const offset = input.shard * SHARD_SIZE;
    const { items } = await runState.readPlanItems(input.plan, { offset, count: SHARD_SIZE });
    const earlier = new Map<number, OutcomeLine>();
    for (const line of await runState.readOutcomes(input.plan, input.shard)) {
      earlier.set(line.index, line);
    }
    const lines = input.outcomes.map((outcome): OutcomeLine => {
      const item = items[outcome.index - offset];
      if (item === undefined) throw planIndexOutOfRange(outcome.index, offset + items.length);
      const previous = earlier.get(outcome.index);
      return {
        index: outcome.index,
        id: item.id,
        status: outcome.status,
        task_id: outcome.taskId,
        attempts: outcome.attempts,
        credits_cost: outcome.creditsCost,
        images: previous?.task_id === outcome.taskId && outcome.taskId !== null ? previous.images : [],
        error: outcome.error,
      };
    });
    await runState.appendOutcomes(input.plan, input.shard, lines, appendSequence(activityContext()));
  };
}
