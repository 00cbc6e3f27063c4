// collectResults (the transfer queue): a group of a shard's finished tasks, from result to stored
// images in one activity. Each task's result is what its webhook told, else a GET in its turn
// (paced like every API call); the images of those that completed are stored as storeResults
// stores them (store-results.ts). One activity per group instead of one GET activity per task:
// each activity costs a dispatch, history events and a workflow task on the server, which is
// most of what an image cost pixelmill at high rates (BENCHMARKS.md, capacity).
//
// A GET that does not go through (an error, or a task that turns out not to be finished) is not
// tried again here: the item comes back without a result and the workflow fetches it apart, with
// Temporal's retries (fetchTask). So an outage of the API never spends the transfer's attempts,
// and one task's failing GET never holds its neighbours back.
import type {
  CollectedItem,
  CollectRequest,
  CollectResultsInput,
  CollectResultsOutput,
  TaskResult,
} from '../common/types.js';
import { storeRequestOf } from '../common/store-request.js';
import { mapLimit } from '../common/map-limit.js';
import type { ApiClients } from './api-clients.js';
import { isAnswered, readTask, withEstimatedCost, type ApiCallDeps } from './api-calls.js';
import type { ResolvedDeps } from './deps.js';
import { asTransfer, storeRequest, type Transfer } from './store-results.js';

/**
 * Items of a group in progress at once: enough to keep GETs in their turn and downloads
 * overlapping, few enough that a group's downloads do not crowd out other shards'.
 */
export const COLLECT_PARALLEL = 8;

export function collectResultsActivity(deps: {
  clients: ApiClients;
  resolved: ResolvedDeps;
  api: Pick<ApiCallDeps, 'gate' | 'evidence'>;
}) {
  return (input: CollectResultsInput): Promise<CollectResultsOutput> =>
    asTransfer(deps, input, async (transfer) => {
      // A failure (a download cut short, a write refused) fails the attempt only once every item
      // has been tried, so that its last heartbeat and outcome lines hold all the others (the next
      // attempt resumes there, 2 s later, with the few that failed). Stopping at the first one
      // left the rest of the group for attempts further and further apart: at 2% of downloads cut,
      // a group of 50 took six attempts and two minutes, a fifth of BFL's retention.
      let failure: { error: unknown } | undefined;
      const items = await mapLimit(input.items, COLLECT_PARALLEL, async (request) => {
        try {
          const { result, called } = await resultOf(deps.api, transfer, request);
          // Counted in the heartbeat, so that a failed attempt's GETs are not lost to the totals.
          if (called) transfer.progress.calls++;
          return await collected(transfer, request, result);
        } catch (error) {
          failure ??= { error };
          return undefined;
        }
      });
      if (failure) throw failure.error;
      return { items: items as CollectedItem[], calls: transfer.progress.calls };
    });
}

/** The task's result: told by a webhook, found by an earlier attempt, else a GET's answer. */
async function resultOf(
  api: Pick<ApiCallDeps, 'gate' | 'evidence'>,
  { ctx, progress, plan }: Transfer,
  request: CollectRequest,
): Promise<{ result?: TaskResult; called: boolean }> {
  const known = request.known ?? progress.results.get(request.index);
  if (known)
    return {
      result: await withEstimatedCost(ctx.runState, plan, ctx.meta, request.index, known),
      called: false,
    };
  try {
    const read = await readTask(api, ctx.meta, ctx.client, request.taskId);
    if (!isAnswered(read.status)) return { called: true };
    const result = await withEstimatedCost(ctx.runState, plan, ctx.meta, request.index, read);
    progress.results.set(request.index, result);
    return { result, called: true };
  } catch {
    // The workflow fetches it apart, where Temporal retries it and its failure is the item's.
    return { called: true };
  }
}

/** The item as collected: its result, and what was stored of a task that completed with images. */
async function collected(
  transfer: Transfer,
  request: CollectRequest,
  result: TaskResult | undefined,
): Promise<CollectedItem> {
  if (!result) return { index: request.index };
  const toStore = storeRequestOf(request, result);
  return toStore
    ? { index: request.index, result, stored: await storeRequest(transfer, toStore) }
    : { index: request.index, result };
}
