// Submit is not idempotent: the API has no idempotency key, so a retried submit creates (and
// bills) a second task. The dangerous moment is a worker dying after the API answered but before
// Temporal recorded the activity's result; at the run's pace that can be a dozen submits per kill.
// So each accepted submit is appended to a journal beside the plan (runstate/submit-journal.ts),
// keyed by the activity execution (workflow, run, activity id: the same for every retry of one
// call), and a retry that finds its call there takes that task without calling the API. What
// remains is a worker dying during the HTTP round trip itself, which no client of this API can
// tell apart.
import { log } from '@temporalio/activity';
import { errorMessage } from '../common/errors.js';
import type { PlanRef } from '../common/types.js';
import type { JournalLine, RunStateStore } from '../runstate/index.js';
import { activityContext } from './context.js';

/** One call of the submit activity, the same across its retries, and which attempt this is. */
export interface SubmitCall {
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
}

/** The running submit call; none outside a workflow's activity (a script, a unit test). */
export function currentSubmitCall(): SubmitCall | undefined {
  const info = activityContext()?.info;
  if (!info?.workflowExecution) return undefined;
  const { workflowId, runId } = info.workflowExecution;
  return { workflowId, runId, activityId: info.activityId, attempt: info.attempt };
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

/** The line of the task an earlier attempt of `call` created, if it lived to record it. */
export async function earlierTask(
  runState: RunStateStore,
  plan: PlanRef,
  call: SubmitCall,
): Promise<JournalLine | undefined> {
  if (call.attempt === 1) return undefined;
  let lines: Partial<JournalLine>[];
  try {
    lines = await runState.readJournal(plan, call.workflowId);
  } catch (error) {
    log.warn(`cannot read the submit journal, so this retry submits again: ${errorMessage(error)}`);
    return undefined;
  }
  for (const line of lines) {
    if (line.run === call.runId && line.activity === call.activityId && typeof line.task === 'string')
      return line as JournalLine;
  }
  return undefined;
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
