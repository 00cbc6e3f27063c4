// Submit is not idempotent: the API has no idempotency key, so a retried submit creates (and
// bills) a second task. The dangerous moment is a worker dying after the API answered but before
// Temporal recorded the activity's result; at the run's pace that can be a dozen submits per kill.
// So each accepted submit is appended to a journal beside the plan, keyed by the activity
// execution (workflow, run, activity id: the same for every retry of one call), and a retry that
// finds its call there takes that task without calling the API. What remains is a worker dying
// during the HTTP round trip itself, which no client of this API can tell apart.
//
// A line is written synchronously the moment the answer is read (not with files.ts's
// appendJsonLines): an asynchronous write would wait in libuv's thread pool behind the image
// downloads' file writes, and the worker could die meanwhile. It is not fsynced: it must outlive the worker process (SIGKILL, OOM, a crash),
// which the page cache does, not the machine. The files stay after the run as the record of
// every task pixelmill created, one per shard workflow: `<state dir>/submits/<workflow id>.jsonl`.
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { log } from '@temporalio/activity';
import { errorMessage } from '../common/errors.js';
import { activityContext } from './context.js';
import { parseJsonLines } from './files.js';

/** One call of the submit activity, the same across its retries, and which attempt this is. */
export interface SubmitCall {
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
}

export interface JournalLine {
  run: string;
  activity: string;
  task: string;
  /** When the answer was read (epoch ms): how long after the API created the task it was safe. */
  at: number;
  /** On a second line for the call: the attempt that took the task over instead of submitting. */
  taken_over_at_attempt?: number;
}

/** The running submit call; none outside a workflow's activity (a script, a unit test). */
export function currentSubmitCall(): SubmitCall | undefined {
  const info = activityContext()?.info;
  if (!info?.workflowExecution) return undefined;
  const { workflowId, runId } = info.workflowExecution;
  return { workflowId, runId, activityId: info.activityId, attempt: info.attempt };
}

const SUBMITS_DIR = 'submits';

export function submitJournalFile(stateDir: string, workflowId: string): string {
  return join(stateDir, SUBMITS_DIR, `${encodeURIComponent(workflowId)}.jsonl`);
}

/**
 * Records that `call` created `taskId`: one O_APPEND write, so worker processes share a file. The
 * task exists and is billed whatever happens next, so a journal that cannot be written is logged
 * and does not fail the call (its retry would submit again).
 */
export function recordTask(stateDir: string, call: SubmitCall, taskId: string): void {
  const line: JournalLine = { run: call.runId, activity: call.activityId, task: taskId, at: Date.now() };
  appendLine(
    stateDir,
    call.workflowId,
    line,
    'cannot write the submit journal, so a retry would submit again',
  );
}

function appendLine(stateDir: string, workflowId: string, line: JournalLine, onError: string): void {
  const file = submitJournalFile(stateDir, workflowId);
  const text = `${JSON.stringify(line)}\n`;
  try {
    try {
      appendFileSync(file, text);
    } catch (error) {
      // The run's first submit creates the directory.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      mkdirSync(dirname(file), { recursive: true });
      appendFileSync(file, text);
    }
  } catch (error) {
    log.warn(`${onError}: ${errorMessage(error)}`);
  }
}

/** The line of the task an earlier attempt of `call` created, if it lived to record it. */
export async function earlierTask(stateDir: string, call: SubmitCall): Promise<JournalLine | undefined> {
  if (call.attempt === 1) return undefined;
  let text: string;
  try {
    text = await readFile(submitJournalFile(stateDir, call.workflowId), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      log.warn(`cannot read the submit journal, so this retry submits again: ${errorMessage(error)}`);
    return undefined;
  }
  for (const value of parseJsonLines(text)) {
    const line = value as Partial<JournalLine> | null;
    if (line?.run === call.runId && line.activity === call.activityId && typeof line.task === 'string')
      return line as JournalLine;
  }
  return undefined;
}

/** A second line for the call: this attempt took the task over, so the journal counts the duplicates saved. */
export function recordTakeover(stateDir: string, call: SubmitCall, earlier: JournalLine): void {
  log.info(`an earlier attempt of this submit created ${earlier.task} before it was cut off`);
  const line: JournalLine = { ...earlier, at: Date.now(), taken_over_at_attempt: call.attempt };
  appendLine(stateDir, call.workflowId, line, 'cannot record a takeover in the submit journal');
}

/** Every line of every shard's journal under `stateDir`, for audits and tests. */
export function readSubmitJournals(stateDir: string): Partial<JournalLine>[] {
  const dir = join(stateDir, SUBMITS_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((file) =>
    Array.from(parseJsonLines(readFileSync(join(dir, file), 'utf8')) as Iterable<Partial<JournalLine>>),
  );
}
