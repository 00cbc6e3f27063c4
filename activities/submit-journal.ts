// A retried submit must not create (and bill) a second task. Two guards, for two moments:
// - The journal: each accepted submit is appended beside the plan (runstate/submit-journal.ts),
//   keyed by the activity execution (workflow, run, activity id: the same for every retry of one
//   call), and a retry (or a first attempt delivered late) that finds its call there takes that
//   task without calling the API. It covers a worker dying after the API answered but before
//   Temporal recorded the result (a dozen submits per kill at the run's pace), against any provider.
// - The Idempotency-Key header, derived from the same call: a retry whose first attempt died
//   while its request was on the wire (no answer, so nothing journaled) sends the same key and
//   body, and a provider that honours keys answers with the first task and charges once.
import { createHash } from 'node:crypto';
import { log } from '@temporalio/activity';
import { errorMessage } from '../common/errors.js';
import type { PlanRef } from '../common/types.js';
import type { JournalLine, RunStateStore } from '../runstate/index.js';
import { activityContext } from './context.js';
import { confirmCurrent, lateStart } from './late-attempts.js';

/** One call of the submit activity, the same across its retries, and which attempt this is. */
export interface SubmitCall {
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
  /**
   * A first attempt that started so long after it was scheduled that Temporal may have timed it
   * out meanwhile and run a later attempt elsewhere (late-attempts.ts): its journal is read like a
   * retry's, though it asked Temporal first: an answer slower than the wait would not have stopped it.
   */
  late?: boolean;
}

/**
 * The Idempotency-Key of `call`: the same for every attempt of it, different for every other call
 * (a resubmit of a failed task is another activity, so another key). A hash, so the header says
 * nothing about the run.
 */
export function idempotencyKeyOf(call: Pick<SubmitCall, 'workflowId' | 'runId' | 'activityId'>): string {
  const hash = createHash('sha256').update(`${call.workflowId}\0${call.runId}\0${call.activityId}`);
  return `pixelmill-${hash.digest('hex')}`;
}

/**
 * The call a submitSlice activity makes for the item at plan index `index`: a call of its own in
 * the journal and for the Idempotency-Key, the same across the slice's attempts.
 */
export function itemCall(slice: SubmitCall, index: number): SubmitCall {
  return { ...slice, activityId: `${slice.activityId}/${index}` };
}

/**
 * A submitItem that carries on the call `activityId` (an item a slice handed back to retry alone):
 * that call's journal entry and key. It counts as a retry, so its journal is read from its first try.
 */
export function carriedCall(current: SubmitCall, activityId: string): SubmitCall {
  return { ...current, activityId, attempt: current.attempt + 1 };
}

/**
 * The running submit call; none outside a workflow's activity (a script, a unit test). A late
 * attempt first makes sure Temporal has not given it up (confirmCurrent): it throws if it has.
 */
export async function currentSubmitCall(): Promise<SubmitCall | undefined> {
  const context = activityContext();
  const info = context?.info;
  if (!context || !info?.workflowExecution) return undefined;
  const { workflowId, runId } = info.workflowExecution;
  const late = lateStart(Date.now(), info.currentAttemptScheduledTimestampMs, info.heartbeatTimeoutMs);
  if (late) await confirmCurrent(context);
  return { workflowId, runId, activityId: info.activityId, attempt: info.attempt, ...(late ? { late } : {}) };
}

/**
 * Records that `call` created `taskId`. The task exists and is billed whatever happens next, so a
 * journal that cannot be written is logged and does not fail the call (its retry would submit again).
 */
export async function recordTask(
  runState: RunStateStore,
  plan: PlanRef,
  call: SubmitCall,
  taskId: string,
): Promise<void> {
  const line: JournalLine = { run: call.runId, activity: call.activityId, task: taskId, at: Date.now() };
  await journal(runState, plan, call, line, 'cannot write the submit journal, so a retry would submit again');
}

async function journal(
  runState: RunStateStore,
  plan: PlanRef,
  call: SubmitCall,
  line: JournalLine,
  onError: string,
): Promise<void> {
  try {
    await runState.journalSubmit(plan, call.workflowId, line);
  } catch (error) {
    log.warn(`${onError}: ${errorMessage(error)}`);
  }
}

/**
 * The journal's task lines of the other attempts of `call` (with `items`, of its slice's item
 * calls): none on a first attempt on time. A journal that cannot be read is logged and reads as
 * empty, so the call submits again, its Idempotency-Key still guarding it.
 */
async function earlierLines(
  runState: RunStateStore,
  plan: PlanRef,
  call: SubmitCall,
  items: boolean,
): Promise<JournalLine[]> {
  if (call.attempt === 1 && !call.late) return [];
  let lines: Partial<JournalLine>[];
  try {
    lines = await runState.readJournal(plan, call.workflowId, {
      run: call.runId,
      activity: call.activityId,
      ...(items ? { items } : {}),
    });
  } catch (error) {
    log.warn(`cannot read the submit journal, so this retry submits again: ${errorMessage(error)}`);
    return [];
  }
  return lines.filter(
    (line): line is JournalLine => line.run === call.runId && typeof line.task === 'string',
  );
}

/** The line of the task an earlier attempt of `call` created, if it lived to record it. */
export async function earlierTask(
  runState: RunStateStore,
  plan: PlanRef,
  call: SubmitCall,
): Promise<JournalLine | undefined> {
  return (await earlierLines(runState, plan, call, false)).find((line) => line.activity === call.activityId);
}

/**
 * The tasks earlier attempts of the submitSlice `slice` created, by plan index: one read of the
 * journal for the whole slice.
 */
export async function earlierSliceTasks(
  runState: RunStateStore,
  plan: PlanRef,
  slice: SubmitCall,
): Promise<Map<number, JournalLine>> {
  const found = new Map<number, JournalLine>();
  const prefix = `${slice.activityId}/`;
  for (const line of await earlierLines(runState, plan, slice, true)) {
    if (!line.activity?.startsWith(prefix)) continue;
    const index = Number(line.activity.slice(prefix.length));
    if (Number.isInteger(index) && !found.has(index)) found.set(index, line);
  }
  return found;
}

/** A second line for the call: this attempt took the task over, so the journal counts the duplicates saved. */
export async function recordTakeover(
  runState: RunStateStore,
  plan: PlanRef,
  call: SubmitCall,
  earlier: JournalLine,
): Promise<void> {
  log.info(`an earlier attempt of this submit created ${earlier.task} before it was cut off`);
  const line: JournalLine = { ...earlier, at: Date.now(), taken_over_at_attempt: call.attempt };
  await journal(runState, plan, call, line, 'cannot record a takeover in the submit journal');
}
