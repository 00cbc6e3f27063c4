// Reads `items_file`: the large-catalog form of a manifest's items, as CSV (with a header row)
// or JSONL (one JSON object per line). Rows come back raw, each with the line it starts on, so that
// validation can point at `catalog.csv:1234:1`.
import { parse } from 'csv-parse/sync';

export interface RawRow {
  line: number;
  /** Column of the problem when the reader knows it (JSON syntax errors). */
  col?: number;
  value?: Record<string, unknown>;
  /** A syntax problem in this row; `value` is then absent. */
  problem?: string;
}

/** CSV cells are text: these columns are converted to the types the item schema expects. */
function csvRecordToItem(record: Record<string, string>): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  for (const [column, cell] of Object.entries(record)) {
    if (cell === '') continue; // an empty cell means "use the default"
    if (column === 'n') item.n = /^-?\d+$/.test(cell.trim()) ? Number(cell) : cell;
    else if (column === 'image_urls') item.image_urls = cell.split(/[\s|]+/).filter(Boolean);
    else item[column] = cell;
  }
  return item;
}

/** A header that cannot name item fields one to one; thrown out of csv-parse's columns callback. */
class CsvHeaderError extends Error {
  override name = 'CsvHeaderError';
}

/** Column names, trimmed; refuses a name given twice (one would silently win) and object internals. */
function csvColumns(header: string[]): string[] {
  const names = header.map((name) => name.trim());
  const first = new Map<string, number>();
  names.forEach((name, index) => {
    if (name === '__proto__' || name === 'constructor' || name === 'prototype') {
      throw new CsvHeaderError(`column ${index + 1} "${name}" is not an item field`);
    }
    const earlier = first.get(name);
    if (earlier !== undefined) {
      throw new CsvHeaderError(`column "${name}" appears twice (columns ${earlier + 1} and ${index + 1})`);
    }
    first.set(name, index);
  });
  return names;
}

export function readCsvRows(text: string): RawRow[] {
  try {
    const records = parse(text, {
      columns: csvColumns,
      bom: true,
      skip_empty_lines: true,
      relax_column_count: false,
      info: true,
    }) as { record: Record<string, string>; info: { lines: number } }[];
    return records.map(({ record, info }) => ({ line: info.lines, value: csvRecordToItem(record) }));
  } catch (error) {
    if (error instanceof CsvHeaderError)
      return [{ line: 1, col: 1, problem: `CSV header: ${error.message}` }];
    const { lines, message } = error as { lines?: number; message: string };
    return [{ line: lines ?? 1, problem: `CSV syntax: ${message.replace(/^Invalid [^:]*: /, '')}` }];
  }
}

export function readJsonlRows(text: string): RawRow[] {
  const rows: RawRow[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const source = lines[index]?.replace(/\r$/, '') ?? '';
    if (source.trim() === '') continue;
    const line = index + 1;
    try {
      const value: unknown = JSON.parse(source);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        rows.push({ line, col: 1, problem: 'each line must be a JSON object' });
      } else {
        rows.push({ line, value: value as Record<string, unknown> });
      }
    } catch (error) {
      const position = /position (\d+)/.exec((error as Error).message)?.[1];
      rows.push({
        line,
        col: position === undefined ? 1 : Number(position) + 1,
        problem: `JSON syntax: ${(error as Error).message.replace(/ in JSON at position \d+.*$/, '')}`,
      });
    }
  }
  return rows;
}
