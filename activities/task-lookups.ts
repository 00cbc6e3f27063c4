// A shard's lookup in the provider's own style (providers/types.ts, LookupStyle), each call in its
// turn at the rate: `batch` one call per 500 tasks; `single` one call per task, a few at once;
// `list` a sweep of the account's tasks created since the oldest one asked, page by page, then
// one call for each task the sweep did not reach (another run's tasks may fill the pages).
//
// One task's failed call does not fail the others' answers: it comes back `unanswered` (not
// finished yet, for the shard) unless every call failed, which throws the first failure for
// Temporal to retry the lookup.
import { mapLimit } from '../common/map-limit.js';
import { taskIdOf } from '../common/task-ref.js';
import type { LookupStyle, ProviderClient, TaskState } from '../providers/types.js';

/** The status of a task whose own call failed in a lookup of several: not an answer, so "not finished yet". */
export const UNANSWERED = 'unanswered';
/** Calls of a `single` lookup in flight at once: enough to overlap round trips, few enough to stay paced. */
export const SINGLE_LOOKUPS_AT_ONCE = 8;
/** Pages a `list` sweep reads at most before asking the rest one at a time. */
export const MAX_SWEEP_PAGES = 10;

export interface LookupRequest {
  refs: readonly string[];
  /** `list`: the earliest creation time among the tasks asked (a little before, for clock skew). */
  sinceMs?: number;
}

/** Runs one call in its turn at the rate, its answer told to the gate. */
export type Paced = <T>(call: () => Promise<T>) => Promise<T>;

export async function lookUpTasks(
  client: ProviderClient,
  style: LookupStyle,
  request: LookupRequest,
  paced: Paced,
): Promise<{ states: TaskState[]; calls: number }> {
  switch (style.kind) {
    case 'batch':
      return batchLookups(client, style.maxIds, request.refs, paced);
    case 'single':
      return singleLookups(client, request.refs, paced);
    case 'list':
      return listSweep(client, request, paced);
  }
}

async function batchLookups(
  client: ProviderClient,
  maxIds: number,
  refs: readonly string[],
  paced: Paced,
): Promise<{ states: TaskState[]; calls: number }> {
  if (!client.lookupBatch) throw new Error(`${client.provider} has no batch lookup`);
  const states: TaskState[] = [];
  let calls = 0;
  for (let at = 0; at < refs.length; at += maxIds) {
    const chunk = refs.slice(at, at + maxIds);
    calls++;
    states.push(...(await paced(() => client.lookupBatch!(chunk))));
  }
  return { states, calls };
}

async function singleLookups(
  client: ProviderClient,
  refs: readonly string[],
  paced: Paced,
): Promise<{ states: TaskState[]; calls: number }> {
  let firstFailure: { error: unknown } | undefined;
  const states = await mapLimit(refs, SINGLE_LOOKUPS_AT_ONCE, async (ref): Promise<TaskState> => {
    try {
      return await paced(() => client.lookupOne(ref));
    } catch (error) {
      firstFailure ??= { error };
      return { status: UNANSWERED };
    }
  });
  if (firstFailure && states.every((state) => state.status === UNANSWERED)) throw firstFailure.error;
  return { states, calls: refs.length };
}

async function listSweep(
  client: ProviderClient,
  request: LookupRequest,
  paced: Paced,
): Promise<{ states: TaskState[]; calls: number }> {
  if (!client.listTasks || request.sinceMs === undefined) return singleLookups(client, request.refs, paced);
  const wanted = new Set(request.refs.map(taskIdOf));
  const found = new Map<string, TaskState>();
  let calls = 0;
  let cursor: string | undefined;
  for (let page = 0; page < MAX_SWEEP_PAGES && found.size < wanted.size; page++) {
    const listed = await paced(() =>
      client.listTasks!(cursor === undefined ? { sinceMs: request.sinceMs! } : { cursor: cursor }),
    );
    calls++;
    for (const task of listed.tasks) {
      if (wanted.has(task.id))
        found.set(task.id, { status: task.status, ...(task.result ? { result: task.result } : {}) });
    }
    cursor = listed.next;
    if (cursor === undefined) break;
  }
  const missed = request.refs.filter((ref) => !found.has(taskIdOf(ref)));
  const stragglers =
    missed.length > 0 ? await singleLookups(client, missed, paced) : { states: [], calls: 0 };
  const byRef = new Map(missed.map((ref, k) => [ref, stragglers.states[k]!]));
  const states = request.refs.map((ref) => found.get(taskIdOf(ref)) ?? byRef.get(ref)!);
  return { states, calls: calls + stragglers.calls };
}
