// Crash-safe file writes of the run's state and output: whole files replaced atomically (temp file,
// fsync, rename) and JSON lines appended whole, so that a reader after a crash sees either the old
// file or the new one, and at worst one torn last line, which readers skip.
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Chunks of about this size are written at once when a file is built from many lines. */
const WRITE_CHUNK_CHARS = 1 << 20;

/** Writes `parts` (concatenated) to `file` via a temp file in the same directory and a rename. */
export async function writeFileAtomic(file: string, parts: Iterable<string>): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const temp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx');
    try {
      let pending = '';
      for (const part of parts) {
        pending += part;
        if (pending.length >= WRITE_CHUNK_CHARS) {
          await handle.write(pending);
          pending = '';
        }
      }
      if (pending !== '') await handle.write(pending);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/**
 * Appends each value as one JSON line, in a single write per call. If the file ends in a torn line
 * (a writer died mid-write), a newline is written first so that the torn line stays alone and the
 * new lines stay readable. With O_APPEND, concurrent appenders can at worst add an empty line.
 */
export async function appendJsonLines(file: string, values: readonly unknown[]): Promise<void> {
  if (values.length === 0) return;
  await mkdir(dirname(file), { recursive: true });
  const handle = await open(file, 'a+');
  try {
    const { size } = await handle.stat();
    let prefix = '';
    if (size > 0) {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) prefix = '\n';
    }
    await handle.write(prefix + values.map((value) => `${JSON.stringify(value)}\n`).join(''));
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Every complete, parseable JSON line of `text`; torn or garbled lines are skipped. */
export function* parseJsonLines(text: string): Generator<unknown> {
  let start = 0;
  while (start < text.length) {
    const end = text.indexOf('\n', start);
    // A last line without its newline may be torn; if it still parses, it was written whole.
    const line = text.slice(start, end === -1 ? text.length : end);
    start = end === -1 ? text.length : end + 1;
    if (line.trim() === '') continue;
    try {
      yield JSON.parse(line) as unknown;
    } catch {
      // A torn line from a crashed writer: ignored by design.
    }
  }
}
