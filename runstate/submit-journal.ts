// The submit journal: one line per task the API created for a submit call, in one file per shard
// workflow, `<state dir>/submits/<workflow id>.jsonl`, kept after the run as the record of every
// task pixelmill created (activities/submit-journal.ts says why a submit needs it).
//
// A line is written synchronously the moment the answer is read (not with files.ts's
// appendJsonLines): an asynchronous write would wait in libuv's thread pool behind the image
// downloads' file writes, and the worker could die meanwhile. It is not fsynced: it must outlive
// the worker process (SIGKILL, OOM, a crash), which the page cache does, not the machine.
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseJsonLines } from './files.js';

export interface JournalLine {
  run: string;
  activity: string;
  task: string;
  /** When the answer was read (epoch ms): how long after the API created the task it was safe. */
  at: number;
  /** On a second line for the call: the attempt that took the task over instead of submitting. */
  taken_over_at_attempt?: number;
}

const SUBMITS_DIR = 'submits';

export function submitJournalFile(stateDir: string, workflowId: string): string {
  return join(stateDir, SUBMITS_DIR, `${encodeURIComponent(workflowId)}.jsonl`);
}

/** Appends `line` to the workflow's journal: one O_APPEND write, so worker processes share a file. */
export function appendJournalLine(stateDir: string, workflowId: string, line: JournalLine): void {
  const file = submitJournalFile(stateDir, workflowId);
  const text = `${JSON.stringify(line)}\n`;
  try {
    appendFileSync(file, text);
  } catch (error) {
    // The run's first submit creates the directory.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, text);
  }
}

/** The lines of the workflow's journal, in file order; none before its first submit. */
export async function readJournal(stateDir: string, workflowId: string): Promise<Partial<JournalLine>[]> {
  let text: string;
  try {
    text = await readFile(submitJournalFile(stateDir, workflowId), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return [...parseJsonLines(text)].filter(
    (value): value is Partial<JournalLine> => typeof value === 'object' && value !== null,
  );
}

/** Every line of every shard's journal under `stateDir`, for audits and tests. */
export function readSubmitJournals(stateDir: string): Partial<JournalLine>[] {
  const dir = join(stateDir, SUBMITS_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((file) =>
    Array.from(parseJsonLines(readFileSync(join(dir, file), 'utf8')) as Iterable<Partial<JournalLine>>),
  );
}
