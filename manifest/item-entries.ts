// The items of a manifest as they were written, each with its place: inline under `items:`, or
// the rows of its items_file (CSV or JSONL, read by items-file.ts). Each row is checked against
// the item schema here; what the items become (variants, templates, references) is expand.ts's.
import { extname } from 'node:path';
import { formatPath } from '../common/problems.js';
import { acceptedItem } from './item-check.js';
import { ItemSchema, type ManifestItem } from './item-schema.js';
import { readCsvRows, readJsonlRows, type ItemRows, type ReadOptions } from './items-file.js';
import { MANIFEST_ROOT, zodProblems, type PathSegment, type Where } from './problems.js';
import type { FieldPlace } from './layers.js';
import { readSource } from './source-file.js';

/** Items in one run: validation holds them all (about 1.5 GB at this size, measured in BENCHMARKS.md). */
export const MAX_ITEMS = 1_000_000;
export const MAX_ITEMS_FILE_BYTES = 512 * 1024 * 1024;

/** One item as written, and where. */
export interface ItemEntry {
  item: ManifestItem;
  /** `file:line:col` of the item. */
  at: string;
  /** How messages name its place: `items[3]`, `row 12`. */
  label: string;
  /** Where one of its own fields is (`image_urls[0]`, `params.seed`). */
  placeOf(path: readonly PathSegment[]): FieldPlace;
  /** Its file has no prompt column: said once, at the header, not again for this row. */
  promptSaidOnce?: true;
}

export function inlineEntries(items: readonly ManifestItem[], where: Where): ItemEntry[] {
  return items.map((item, index) => ({
    item,
    at: where(['items', index]),
    label: `items[${index}]`,
    placeOf: (path) => ({
      at: where(['items', index, ...path]),
      path: formatPath(['items', index, ...path], MANIFEST_ROOT),
    }),
  }));
}

/**
 * A row of an items file as an entry. Its place is worked out when a message needs it: a
 * 100,000-row file would otherwise keep two strings and a function for each row.
 */
class FileRowEntry implements ItemEntry {
  promptSaidOnce?: true;

  constructor(
    readonly item: ManifestItem,
    private readonly file: string,
    private readonly line: number,
    private readonly col: number,
    private readonly index: number,
  ) {}

  get at(): string {
    return `${this.file}:${this.line}:${this.col}`;
  }

  get label(): string {
    return `row ${this.index + 1}`;
  }

  placeOf(path: readonly PathSegment[]): FieldPlace {
    return { at: this.at, path: `${this.label} ${formatPath(path, MANIFEST_ROOT)}` };
  }
}

/** The rows of an items file read whole; undefined (with a problem) when it cannot be. */
export function readItemsFile(
  file: string,
  label: string,
  problems: string[],
  options: ReadOptions,
): (ItemRows & { bytes: Buffer }) | undefined {
  const kind = extname(file).toLowerCase();
  if (kind !== '.csv' && kind !== '.jsonl' && kind !== '.ndjson') {
    problems.push(`${label}: items_file must end in .csv or .jsonl`);
    return undefined;
  }
  const source = readSource(file, label, MAX_ITEMS_FILE_BYTES, problems);
  if (!source) return undefined;
  const read =
    kind === '.csv'
      ? readCsvRows(source.text, MAX_ITEMS, options)
      : readJsonlRows(source.text, MAX_ITEMS, options);
  return { ...read, bytes: source.bytes };
}

/**
 * The valid rows of an items file as entries; each problem of the file and its rows pushed. With
 * `promptRequired` (no template anywhere), a row without a prompt is said with its other problems.
 */
export function fileEntries(
  read: ItemRows,
  label: string,
  problems: string[],
  promptRequired: boolean,
): ItemEntry[] {
  for (const { line, col, problem } of read.fileProblems)
    problems.push(`${label}:${line}:${col ?? 1} ${problem}`);
  // A column the header lacks is said once above, not again for every row.
  const absent = new Set<PropertyKey>(read.absentFields);
  const entries: ItemEntry[] = [];
  read.rows.forEach((row, index) => {
    const at = (): string => `${label}:${row.line}:${row.col ?? 1}`;
    if (row.problem) return problems.push(`${at()} ${row.problem}`);
    const noPrompt =
      promptRequired &&
      !absent.has('prompt') &&
      row.value?.prompt === undefined &&
      row.value?.prompt_template === undefined;
    if (noPrompt) problems.push(`${at()} prompt: is required`);
    const accepted = acceptedItem(row.value);
    const item = accepted
      ? { success: true as const, data: accepted }
      : ItemSchema.safeParse(row.value, { reportInput: true });
    if (!item.success) {
      const issues = item.error.issues.filter((issue) => !absent.has(issue.path[0] ?? ''));
      return problems.push(
        ...zodProblems(issues, ItemSchema, at).map((p) => p.replace(' (top level)', ' row')),
      );
    }
    const entry = new FileRowEntry(item.data, label, row.line, row.col ?? 1, index);
    if (absent.has('prompt') || noPrompt) entry.promptSaidOnce = true;
    entries.push(entry);
  });
  return entries;
}
