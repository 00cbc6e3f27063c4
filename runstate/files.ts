// Crash-safe file writes of the run's state and output: whole files replaced atomically (temp file,
// fsync, rename) and JSON lines appended whole, so that a reader after a crash sees either the old
// file or the new one, and at worst one torn last line, which readers skip.
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';

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
    const value = parsedLine(line);
    if (value !== undefined) yield value;
  }
}

/** A JSON line's value; undefined for a blank line or a torn or garbled one (ignored by design). */
export function parsedLine(line: string): unknown {
  if (line.trim() === '') return undefined;
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}

/** Bytes read from a file at a time by fileLines. */
const READ_CHUNK_BYTES = 1 << 16;

/**
 * The lines of an open file, a chunk at a time: at most a chunk and one line are in memory, not
 * the file (a 300,000-output catalog index is 130 MB of text). The handle is closed at the end, or
 * when the reader stops early. Lines are yielded a chunk's worth at once (an await per line costs
 * more than the split).
 */
export async function* fileLines(handle: FileHandle): AsyncGenerator<string[]> {
  try {
    const decoder = new StringDecoder('utf8');
    const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    let pending = '';
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      const text = pending + decoder.write(buffer.subarray(0, bytesRead));
      const lines = text.split('\n');
      pending = lines.pop()!;
      if (lines.length > 0) yield lines;
    }
    pending += decoder.end();
    if (pending !== '') yield [pending];
  } finally {
    await handle.close();
  }
}
