// Turns YAML and zod findings into `file:line:col path: message` lines: every problem at once,
// each pointing at the place a person has to edit.
import { isMap, isScalar, visit, LineCounter, type Document, type YAMLError } from 'yaml';
import type { z } from 'zod';
import { formatPath } from '../common/problems.js';
import { didYouMean, knownKeysAt, nearestName } from './suggest.js';

export type PathSegment = string | number;

/** How a manifest's problems name the document itself. */
export const MANIFEST_ROOT = '(top level)';

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

/** A number written as money (`$12.50`, `12,50 USD`) is text to YAML: what to write instead. */
function amountHint(issue: { expected: string; input?: unknown }): string {
  if (issue.expected !== 'number' || typeof issue.input !== 'string') return '';
  const amount = issue.input.replace(/[\s$€£]|usd|eur/gi, '').replace(/^(\d+),(\d{1,2})$/, '$1.$2');
  return amount !== '' && Number.isFinite(Number(amount))
    ? ` (write ${amount}, without a currency sign or unit)`
    : '';
}

/** zod's messages, in the words of someone editing a YAML file. */
function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int') return 'must be a whole number';
      if (issue.expected === 'array') return `must be a list, not ${kindOf(issue.input)}`;
      if (issue.expected === 'object') return `must be a mapping, not ${kindOf(issue.input)}`;
      return `must be ${issue.expected === 'string' ? 'text' : `a ${issue.expected}`}, not ${kindOf(issue.input)}${amountHint(issue)}`;
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

/**
 * One line per zod issue of a value checked against `schema`. Unknown keys get one line each, at
 * the key, with the known key nearest to it; a required field that such a key misspells is left
 * to that line rather than said twice.
 */
export function zodProblems(issues: readonly z.core.$ZodIssue[], schema: z.ZodType, where: Where): string[] {
  const lines: string[] = [];
  const misspelt = new Set<string>();
  for (const issue of issues) {
    if (issue.code !== 'unrecognized_keys') continue;
    const path = issue.path as PathSegment[];
    const present = new Set(issue.input && typeof issue.input === 'object' ? Object.keys(issue.input) : []);
    const known = knownKeysAt(schema, path).filter((key) => !present.has(key));
    for (const key of issue.keys) {
      const nearest = nearestName(key, known);
      if (nearest !== undefined) misspelt.add(formatPath([...path, nearest], MANIFEST_ROOT));
      lines.push(
        `${where([...path, key], { atKey: true })} ${formatPath([...path, key], MANIFEST_ROOT)}: unknown field${didYouMean(nearest)}`,
      );
    }
  }
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') continue;
    const path = issue.path as PathSegment[];
    const missing = issue.code === 'invalid_type' && issue.input === undefined;
    if (missing && misspelt.has(formatPath(path, MANIFEST_ROOT))) continue;
    lines.push(`${where(path)} ${formatPath(path, MANIFEST_ROOT)}: ${describeIssue(issue)}`);
  }
  return lines;
}

/**
 * Where a YAML syntax error is. The yaml library puts a missing closing quote where the quoted
 * text ends, often lines later at the end of the file; a person looks for the quote that opened it.
 */
export function yamlErrorOffset(doc: Document, error: YAMLError): number {
  const [offset] = error.pos;
  if (error.code !== 'MISSING_CHAR' || !/closing .?quote/.test(error.message)) return offset;
  let opening = offset;
  visit(doc, {
    Scalar(_key, node) {
      if ((node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE') && node.range?.[1] === offset) {
        opening = node.range[0];
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return opening;
}

/**
 * Problems in the order a person fixes them: file by file in the order of `files` (the manifest
 * first), then by line and column. A problem about a whole file comes before its lines.
 */
export function sortProblems(problems: readonly string[], files: readonly string[]): string[] {
  const keyed = problems.map((problem) => {
    // The longest name that matches: `a.yaml` must not claim the lines of `a.yaml.csv`.
    let file = -1;
    files.forEach((name, index) => {
      if (problem.startsWith(`${name}:`) && (file === -1 || name.length > (files[file]?.length ?? 0)))
        file = index;
    });
    const at = /^:(\d+):(\d+) /.exec(problem.slice(files[file]?.length ?? 0));
    return {
      problem,
      key: [file === -1 ? files.length : file, Number(at?.[1] ?? 0), Number(at?.[2] ?? 0)],
    };
  });
  const compare = (a: number[], b: number[]): number =>
    (a[0] ?? 0) - (b[0] ?? 0) || (a[1] ?? 0) - (b[1] ?? 0) || (a[2] ?? 0) - (b[2] ?? 0);
  return keyed.sort((a, b) => compare(a.key, b.key)).map(({ problem }) => problem);
}
