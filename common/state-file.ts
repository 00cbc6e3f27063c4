// Small JSON files a command keeps in its state folder (ports it reuses, retry records): written
// whole or not at all (a temp file renamed into place), and read with the file named in every
// problem, so that a file cut short by a crash is one clear line, never "Unexpected end of JSON".
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { UserError } from './errors.js';

/** Replaces `file` with `value` as JSON, atomically. */
export function writeJsonFile(file: string, value: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  try {
    writeFileSync(temp, `${JSON.stringify(value, null, 2)}\n`);
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * The JSON in `file`; undefined when there is no such file. A file that cannot be read or parsed
 * is a UserError naming it, unless `damaged` is 'ignore' (files that only remember a hint, such
 * as a port to reuse, which the caller then writes anew).
 */
export function readJsonFile<T>(file: string, damaged: 'refuse' | 'ignore' = 'refuse'): T | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (damaged === 'ignore') return undefined;
    throw new UserError('state_file_unreadable', `${file} cannot be read: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    if (damaged === 'ignore') return undefined;
    const why = text.trim() === '' ? 'it is empty' : `it is not valid JSON (${(error as Error).message})`;
    throw new UserError(
      'state_file_damaged',
      `${file} is damaged: ${why}; remove it and run the command again`,
    );
  }
}
