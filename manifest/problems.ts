// Turns YAML and zod findings into `file:line:col path: message` lines: every problem at once,
// each pointing at the place a person has to edit.
import { isMap, isScalar, LineCounter, type Document } from 'yaml';
import type { z } from 'zod';

export type PathSegment = string | number;

/** `items[3].prompt`, `limits.requests_per_second`, or `(top level)`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out || '(top level)';
}

export interface Located {
  line: number;
  col: number;
}

/**
 * Where a path is in a YAML document: the value's node, or with `atKey` the key's (for unknown
 * fields); for a path that is absent (a missing field), its closest ancestor.
 */
export function locate(
  doc: Document,
  lineCounter: LineCounter,
  path: readonly PathSegment[],
  { atKey = false }: { atKey?: boolean } = {},
): Located {
  if (atKey && path.length > 0) {
    const parent = doc.getIn(path.slice(0, -1), true);
    if (isMap(parent)) {
      const pair = parent.items.find(
        (item) => isScalar(item.key) && item.key.value === path[path.length - 1],
      );
      if (isScalar(pair?.key) && pair.key.range) return lineCounter.linePos(pair.key.range[0]);
    }
  }
  for (let depth = path.length; depth >= 0; depth--) {
    const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) return lineCounter.linePos(range[0]);
  }
  return { line: 1, col: 1 };
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value === 'string' ? 'text' : `a ${typeof value}`;
}

/** zod's messages, in the words of someone editing a YAML file. */
function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int') return 'must be a whole number';
      if (issue.expected === 'array') return `must be a list, not ${kindOf(issue.input)}`;
      if (issue.expected === 'object') return `must be a mapping, not ${kindOf(issue.input)}`;
      return `must be ${issue.expected === 'string' ? 'text' : `a ${issue.expected}`}, not ${kindOf(issue.input)}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'too_small':
      if (issue.origin === 'array') return `must have at least ${issue.minimum} entries`;
      return `must be ${issue.inclusive ? 'at least' : 'greater than'} ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'array') return `must have at most ${issue.maximum} entries`;
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      return `must be ${issue.inclusive ? 'at most' : 'less than'} ${issue.maximum}`;
    default:
      return issue.message;
  }
}

export type Where = (path: readonly PathSegment[], options?: { atKey?: boolean }) => string;

/** One line per zod issue; unknown keys get one line each, at the key. */
export function zodProblems(
  error: z.ZodError,
  where: Where,
  pathPrefix: readonly PathSegment[] = [],
): string[] {
  const lines: string[] = [];
  for (const issue of error.issues) {
    const path = [...pathPrefix, ...(issue.path as PathSegment[])];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        lines.push(`${where([...path, key], { atKey: true })} ${formatPath([...path, key])}: unknown field`);
    } else {
      lines.push(`${where(path)} ${formatPath(path)}: ${describeIssue(issue)}`);
    }
  }
  return lines;
}
