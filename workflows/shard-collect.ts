// The shard's collect step: read each finished task (from its webhook, else a GET) and store the
// images of those that completed, in one activity per batch (collectResults). A task whose GET
// did not go through there is fetched apart (fetchTask, with Temporal's retries), then stored.
import type { ApiCallCounts, PlanRef, StoreRequest, TaskResult } from '../common/types.js';
import type { ActivitiesOn } from './activities.js';
import type { ShardItems } from './shard-items.js';
import { taskIdOf } from '../common/task-ref.js';
import { failureSummary } from './tracking.js';

export interface Collector {
  items: ShardItems;
  activities: Pick<ActivitiesOn, 'collectResults' | 'fetchTask' | 'storeResults'>;
  plan: PlanRef;
  shardIndex: number;
  /** The shard's call counts, which the GETs add to. */
  apiCalls: ApiCallCounts;
}

export async function collectBatch(collector: Collector, batch: readonly number[]): Promise<void> {
  const { items, activities, plan, shardIndex, apiCalls } = collector;
  const apart: number[] = [];
  try {
    const collected = await activities.collectResults.executeWithOptions(
      { summary: `collect ${batch.length} results` },
      [{ plan, shard: shardIndex, items: batch.map((index) => items.collectRequest(index)) }],
    );
    apiCalls.get += collected.calls ?? 0;
    for (const item of collected.items) {
      const index = items.collected(item);
      if (index !== undefined) apart.push(index);
    }
  } catch {
    // The group failed for good (a store that refuses it, its attempts spent): each task is read
    // and settled apart, so failed tasks are resubmitted and credits counted as they would be,
    // and what still cannot be stored fails with its store's error.
    return fetchApartAndStore(collector, batch);
  }
  if (apart.length > 0) await fetchApartAndStore(collector, apart);
}

/** Reads each task by a GET activity of its own, then stores those that completed. */
async function fetchApartAndStore(collector: Collector, batch: readonly number[]): Promise<void> {
  const { items, activities, plan, shardIndex } = collector;
  const toStore: StoreRequest[] = [];
  await Promise.all(
    batch.map(async (index) => {
      try {
        const request = items.settle(index, await resultOf(collector, index));
        if (request) toStore.push(request);
      } catch (error) {
        items.finish(index, 'failed', failureSummary(error));
      }
    }),
  );
  if (toStore.length === 0) return;
  try {
    const { items: stored } = await activities.storeResults.executeWithOptions(
      { summary: `store ${toStore.length} results` },
      [{ plan, shard: shardIndex, items: toStore }],
    );
    items.stored(stored);
  } catch (error) {
    items.storeFailed(toStore, failureSummary(error));
  }
}

/**
 * The task's terminal state: from a webhook or a lookup (its cost estimated where the provider
 * reports none, as collectResults does), else from a GET.
 */
async function resultOf(
  { items, activities, plan, apiCalls }: Collector,
  index: number,
): Promise<TaskResult> {
  const known = items.knownResult(index);
  const taskId = items.taskIdOf(index);
  const fetched = await activities.fetchTask.executeWithOptions(
    { summary: `${known ? 'read' : 'fetch'} task ${taskIdOf(taskId)}` },
    [{ plan, taskId, index: items.planIndexOf(index), ...(known ? { known } : {}) }],
  );
  apiCalls.get += fetched.calls ?? 1;
  return fetched;
}
