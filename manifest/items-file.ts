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
  /** The row past the item limit: the file is refused as a whole, its rows not validated. */
  overLimit?: true;
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

/** The row after the last one read when a file has more than `maxRows` rows. */
function overLimit(line: number, maxRows: number): RawRow {
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

/** Rows of a CSV file with a header; at most `maxRows` (one more row reports the excess). */
export function readCsvRows(text: string, maxRows = Number.POSITIVE_INFINITY): RawRow[] {
  try {
    const records = parse(text, {
      // Parsing stops after one row too many: an oversized file is refused, not held in memory.
      ...(Number.isFinite(maxRows) ? { to: maxRows + 1 } : {}),
      columns: csvColumns,
      bom: true,
      skip_empty_lines: true,
      relax_column_count: false,
      info: true,
      raw: true,
    }) as { record: Record<string, string>; info: { lines: number }; raw: string }[];
    const rows = records.slice(0, maxRows).map(({ record, info, raw }): RawRow => ({
      line: startLine(info.lines, raw),
      value: csvRecordToItem(record),
    }));
    const extra = records[maxRows];
    if (extra !== undefined) rows.push(overLimit(startLine(extra.info.lines, extra.raw), maxRows));
    return rows;
  } catch (error) {
    if (error instanceof CsvHeaderError)
      return [{ line: 1, col: 1, problem: `CSV header: ${error.message}` }];
    const { lines, message } = error as { lines?: number; message: string };
    return [{ line: lines ?? 1, problem: `CSV syntax: ${message.replace(/^Invalid [^:]*: /, '')}` }];
  }
}

/** Rows of a JSONL file; at most `maxRows` (one more row reports the excess). */
export function readJsonlRows(text: string, maxRows = Number.POSITIVE_INFINITY): RawRow[] {
  const rows: RawRow[] = [];
  let items = 0;
  // Line by line, never the whole file split at once: an oversized file stops at its limit.
  for (let start = 0, line = 1; start < text.length; line++) {
    const end = text.indexOf('\n', start);
    const source = text.slice(start, end === -1 ? text.length : end).replace(/\r$/, '');
    start = end === -1 ? text.length : end + 1;
    if (source.trim() === '') continue;
    if (++items > maxRows) {
      rows.push(overLimit(line, maxRows));
      break;
    }
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
