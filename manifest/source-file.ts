// Reading the manifest and its items_file as text: a file of bounded size, valid UTF-8, its
// problems said as `file: message` (or `file:line:col` where the bytes stop being text).
import { readFileSync, statSync } from 'node:fs';
import { relative } from 'node:path';

export interface SourceText {
  text: string;
  bytes: Buffer;
}

/** How problems name a file: relative to the working directory when it is inside it. */
export function displayName(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel && !rel.startsWith('..') ? rel : file;
}

export function readSource(
  file: string,
  label: string,
  maxBytes: number,
  problems: string[],
  /** What to do about a file over the limit. */
  overLimitHint = '',
): SourceText | undefined {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) {
      problems.push(`${label}: not a file`);
      return undefined;
    }
    size = stat.size;
  } catch {
    problems.push(`${label}: file not found`);
    return undefined;
  }
  if (size > maxBytes) {
    problems.push(
      `${label}: file is ${(size / 1048576).toFixed(1)} MiB, over the ${maxBytes / 1048576} MiB limit${overLimitHint}`,
    );
    return undefined;
  }
  const bytes = readFileSync(file);
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), bytes };
  } catch {
    const lenient = bytes.toString('utf8');
    const before = lenient.slice(0, Math.max(0, lenient.indexOf('\uFFFD')));
    const line = before.split('\n').length;
    const col = before.length - before.lastIndexOf('\n');
    problems.push(`${label}:${line}:${col} the file is not valid UTF-8 text`);
    return undefined;
  }
}
