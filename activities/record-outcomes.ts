// The recordOutcomes activity: an adapter from a shard's final outcomes to the run state's
// outcome lines (runstate/outcomes.ts).
import type { RecordOutcomesInput } from '../common/types.js';
import { activityContext, appendSequence } from './context.js';
import type { OutcomeLine, RunStateStore } from '../runstate/index.js';

/**
 * recordOutcomes: the final lines of items that did not end with stored images. Images that
 * storeResults did store for the same task (before its URL expired, say) stay in the item's line.
 */
export function recordOutcomesActivity(runState: RunStateStore) {
  return async function recordOutcomes(input: RecordOutcomesInput): Promise<void> {
    const earlier = new Map<number, OutcomeLine>();
    const indices = new Set(input.outcomes.map((outcome) => outcome.index));
    for (const line of await runState.readOutcomes(input.plan, input.shard, indices)) {
      earlier.set(line.index, line);
    }
    const lines: OutcomeLine[] = [];
    for (const outcome of input.outcomes) {
      // By index: the store reads (and keeps) only the plan's parts these items are in.
      const { item } = await runState.readPlanItem(input.plan, outcome.index);
      const previous = earlier.get(outcome.index);
      lines.push({
        index: outcome.index,
        id: item.id,
        status: outcome.status,
        task_id: outcome.taskId,
        attempts: outcome.attempts,
        credits_cost: outcome.creditsCost,
        images: previous?.task_id === outcome.taskId && outcome.taskId !== null ? previous.images : [],
        error: outcome.error,
      });
    }
    await runState.appendOutcomes(input.plan, input.shard, lines, appendSequence(activityContext()));
  };
}
