// Reads `items_file`: the large-catalog form of a manifest's items, as CSV (with a header row)
// or JSONL (one JSON object per line). Rows come back raw, each with the line it starts on, so that
// validation can point at `catalog.csv:1234:1`; a CSV header's problems are said once, at the cell.
// A column (or JSONL key) that is not an item field is a variable of the item, for its templates,
// its variants' `where` and the gallery's search; one that looks like a misspelt field is refused
// unless a template or a `where` names it.
import { parse } from 'csv-parse/sync';
import { UserError } from '../common/errors.js';
import { ITEM_FIELD_NAMES } from './item-schema.js';
import { didYouMean, nearestName } from './suggest.js';

export { readJsonlRows } from './items-jsonl.js';

export interface RawRow {
  line: number;
  /** Column of the problem when the reader knows it (JSON syntax errors). */
  col?: number;
  value?: Record<string, unknown>;
  /** A syntax problem in this row; `value` is then absent. */
  problem?: string;
  /** The row past the item limit: the file is refused as a whole, its rows not validated. */
  overLimit?: true;
}

/** A problem of an items file as a whole: said once, however many rows it touches. */
export interface FileProblem {
  line: number;
  col?: number;
  problem: string;
}

/** An items file read: the problems of the file as a whole, and its rows. */
export interface ItemRows {
  /** A CSV header's problems (at its cells), or the syntax error that stopped the reading. */
  fileProblems: FileProblem[];
  /** Required fields the file has no column for: said once in `fileProblems`, not again per row. */
  absentFields: string[];
  rows: RawRow[];
  /** The names of its variables (the CSV header's other columns, the JSONL rows' other keys), if any. */
  variableNames?: string[];
}

/** What the manifest says of the items it reads. */
export interface ReadOptions {
  /** Names its templates and `where` selections use: such a column is a variable, whatever its name. */
  named?: ReadonlySet<string>;
  /** A template of the manifest makes every item's prompt: no `prompt` column is needed. */
  promptFromTemplates?: boolean;
}

/** A column that is no item field and no name the manifest uses, yet close to a field: a misspelling. */
export function misspeltField(
  name: string,
  unclaimed: readonly string[],
  options: ReadOptions,
): string | undefined {
  return options.named?.has(name) ? undefined : nearestName(name, unclaimed);
}

/**
 * CSV cells are text: these columns are converted to the types the item schema expects, and the
 * columns that are no item field become its variables.
 */
function csvRecordToItem(record: Record<string, string>): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  let variables: Record<string, string> | undefined;
  for (const [column, cell] of Object.entries(record)) {
    if (cell === '') continue; // an empty cell means "use the default" (a variable: no value)
    if (column === 'n') item.n = /^-?\d+$/.test(cell.trim()) ? Number(cell) : cell;
    else if (column === 'image_urls') item.image_urls = cell.split(/[\s|]+/).filter(Boolean);
    else if (ITEM_FIELD_NAMES.has(column) && column !== 'variables') item[column] = cell;
    else (variables ??= {})[column] = cell;
  }
  if (variables) item.variables = variables;
  return item;
}

/** Item fields a CSV column may name (a `variables` column is a variable like any other). */
export const ITEM_FIELDS = [...ITEM_FIELD_NAMES].filter((field) => field !== 'variables');

/**
 * A header that cannot name item fields one to one; thrown out of csv-parse's columns callback and
 * caught by readCsvRows, which reports it as a file problem at its cell.
 */
export class CsvHeaderError extends UserError {
  override name = 'CsvHeaderError';
  constructor(
    message: string,
    readonly at: TextPosition,
  ) {
    super('csv_header_invalid', message);
  }
}

interface TextPosition {
  line: number;
  col: number;
}

/**
 * Walks CSV text as csv-parse reads it (cells split at commas and line breaks, blank lines skipped,
 * a cell that starts with `"` running to its closing quote, `""` being a quote inside it): where
 * the header's cells start and, with `wholeFile`, where the quoted cell that the file ends inside
 * opens.
 */
function csvLayout(text: string, wholeFile: boolean): { header: TextPosition[]; unclosed?: TextPosition } {
  const header: TextPosition[] = [];
  let line = 1;
  let lineStart = text.startsWith('\uFEFF') ? 1 : 0;
  let records = 0;
  let recordStarted = false;
  let cellStarts = true;
  let quoted: TextPosition | undefined;
  for (let i = lineStart; i < text.length; i++) {
    const char = text[i];
    if (char === '\n') {
      [line, lineStart] = [line + 1, i + 1];
      if (quoted) continue;
      if (recordStarted && ++records === 1 && !wholeFile) break;
      [recordStarted, cellStarts] = [false, true];
      continue;
    }
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') i++;
      else if (char === '"') quoted = undefined;
      continue;
    }
    if (char === '\r') continue;
    const here = { line, col: i - lineStart + 1 };
    if (!recordStarted && records === 0) header.push(here);
    recordStarted = true;
    if (char === ',') {
      if (records === 0) header.push({ line, col: here.col + 1 });
      cellStarts = true;
      continue;
    }
    if (char === '"' && cellStarts) quoted = here;
    cellStarts = false;
  }
  return quoted ? { header, unclosed: quoted } : { header };
}

/**
 * Column names, trimmed. Refuses a name given twice (one would silently win) and object internals;
 * a name that looks like a misspelt field is said once, at its header cell, and its column left
 * out of every row. Any other name is a variable.
 */
function csvColumns(
  header: string[],
  cells: TextPosition[],
  problems: FileProblem[],
  options: ReadOptions,
): (string | false)[] {
  const names = header.map((name) => name.trim());
  const at = (index: number): TextPosition => cells[index] ?? { line: 1, col: 1 };
  const first = new Map<string, number>();
  names.forEach((name, index) => {
    if (name === '__proto__' || name === 'constructor' || name === 'prototype') {
      throw new CsvHeaderError(`column ${index + 1} "${name}" is not an item field`, at(index));
    }
    const earlier = first.get(name);
    if (earlier !== undefined) {
      throw new CsvHeaderError(
        `column "${name}" appears twice (columns ${earlier + 1} and ${index + 1})`,
        at(index),
      );
    }
    first.set(name, index);
  });
  const unclaimed = ITEM_FIELDS.filter((field) => !first.has(field));
  const meant = new Set<string>();
  const columns = names.map((name, index) => {
    // An unnamed column (a trailing comma) is left to the rows: its empty cells mean nothing.
    if (name === '' || ITEM_FIELDS.includes(name)) return name;
    const nearest = misspeltField(name, unclaimed, options);
    if (nearest === undefined) return name;
    meant.add(nearest);
    problems.push({
      ...at(index),
      problem: `${name}: unknown column${didYouMean(nearest)}`,
    });
    return false;
  });
  if (!options.promptFromTemplates && !first.has('prompt') && !first.has('prompt_template')) {
    if (!meant.has('prompt') && !meant.has('prompt_template'))
      problems.push({
        ...at(0),
        problem: 'prompt: no "prompt" column, which every row needs',
      });
  }
  return columns;
}

/** The row after the last one read when a file has more than `maxRows` rows. */
export function overLimit(line: number, maxRows: number): RawRow {
  return {
    line,
    col: 1,
    problem: `more than ${maxRows.toLocaleString('en-US')} items: split the catalog into several manifests`,
    overLimit: true,
  };
}

/**
 * The line a record starts on. csv-parse counts the lines read when the record ends; a quoted
 * cell may span several, and `raw` (blank lines skipped before it, the record, its line break)
 * says how many.
 */
function startLine(endLine: number, raw: string): number {
  const record = raw.replace(/^(\r?\n)+/, '').replace(/\r?\n$/, '');
  return endLine - (record.match(/\n/g)?.length ?? 0);
}

/** A record of a CSV file: its cells by column name, and the line it starts on. */
interface CsvRecord {
  record: Record<string, string>;
  line: number;
}

/**
 * The records of CSV text with no quote and no carriage return anywhere, most product exports:
 * each non-empty line a record, each comma the end of a cell. Read by splitting, five times
 * faster than csv-parse with the positions this reader needs. Undefined when a record's cells
 * do not match the header's: csv-parse reads that file again, for its message.
 */
function plainCsvRecords(
  text: string,
  maxRecords: number,
  header: (names: string[]) => (string | false)[],
): CsvRecord[] | undefined {
  const records: CsvRecord[] = [];
  let columns: (string | false)[] | undefined;
  let line = 0;
  for (let start = text.startsWith('\uFEFF') ? 1 : 0; start < text.length && records.length < maxRecords;) {
    const end = text.indexOf('\n', start);
    const content = text.slice(start, end === -1 ? text.length : end);
    start = end === -1 ? text.length : end + 1;
    line++;
    if (content === '') continue; // csv-parse's skip_empty_lines
    const cells = content.split(',');
    if (columns === undefined) {
      columns = header(cells);
      continue;
    }
    if (cells.length !== columns.length) return undefined;
    const record: Record<string, string> = {};
    for (let k = 0; k < cells.length; k++) {
      const column = columns[k]!;
      if (column !== false) record[column] = cells[k]!;
    }
    records.push({ record, line });
  }
  return records;
}

/** The records of any CSV text, by csv-parse, which says where and why it cannot read one. */
function parsedCsvRecords(
  text: string,
  maxRecords: number,
  header: (names: string[]) => (string | false)[],
): CsvRecord[] {
  const records = parse(text, {
    // Parsing stops after one row too many: an oversized file is refused, not held in memory.
    ...(Number.isFinite(maxRecords) ? { to: maxRecords } : {}),
    columns: header,
    bom: true,
    skip_empty_lines: true,
    relax_column_count: false,
    info: true,
    raw: true,
  }) as { record: Record<string, string>; info: { lines: number }; raw: string }[];
  return records.map(({ record, info, raw }) => ({ record, line: startLine(info.lines, raw) }));
}

/** Rows of a CSV file with a header; at most `maxRows` (one more row reports the excess). */
export function readCsvRows(
  text: string,
  maxRows = Number.POSITIVE_INFINITY,
  options: ReadOptions = {},
): ItemRows {
  let fileProblems: FileProblem[] = [];
  let columns: (string | false)[] = [];
  try {
    const cells = csvLayout(text, false).header;
    const header = (names: string[]) => {
      fileProblems = [];
      return (columns = csvColumns(names, cells, fileProblems, options));
    };
    const plain = /["\r]/.test(text) ? undefined : plainCsvRecords(text, maxRows + 1, header);
    const records = plain ?? parsedCsvRecords(text, maxRows + 1, header);
    const rows = records.slice(0, maxRows).map(({ record, line }): RawRow => ({
      line,
      value: csvRecordToItem(record),
    }));
    const extra = records[maxRows];
    if (extra !== undefined) rows.push(overLimit(extra.line, maxRows));
    const promptAbsent =
      !options.promptFromTemplates && !columns.includes('prompt') && !columns.includes('prompt_template');
    const variableNames = columns.filter(
      (column): column is string => column !== false && column !== '' && !ITEM_FIELDS.includes(column),
    );
    return {
      fileProblems,
      absentFields: promptAbsent ? ['prompt'] : [],
      rows,
      ...(variableNames.length > 0 ? { variableNames } : {}),
    };
  } catch (error) {
    if (error instanceof CsvHeaderError) {
      const problem = { ...error.at, problem: `CSV header: ${error.message}` };
      return { fileProblems: [problem], absentFields: [], rows: [] };
    }
    const { code, lines, message } = error as { code?: string; lines?: number; message: string };
    // csv-parse names the line it stopped at, the end of the file, not where the quote opened.
    const unclosed = code === 'CSV_QUOTE_NOT_CLOSED' ? csvLayout(text, true).unclosed : undefined;
    const syntax: FileProblem = unclosed
      ? {
          ...unclosed,
          problem: `CSV syntax: Quote Not Closed: the quoted cell opened here runs to the end of the file`,
        }
      : { line: lines ?? 1, problem: `CSV syntax: ${message.replace(/^Invalid [^:]*: /, '')}` };
    return { fileProblems: [...fileProblems, syntax], absentFields: [], rows: [] };
  }
}
