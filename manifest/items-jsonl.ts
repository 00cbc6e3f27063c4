// Reads a JSONL `items_file`: one JSON object per line, each with the line it is on. Keys that are
// no item field are the item's variables (items-file.ts says which names count as misspellings).
import { ITEM_FIELD_NAMES } from './item-schema.js';
import {
  ITEM_FIELDS,
  misspeltField,
  overLimit,
  type ItemRows,
  type RawRow,
  type ReadOptions,
} from './items-file.js';

/** Rows of a JSONL file; at most `maxRows` (one more row reports the excess). */
export function readJsonlRows(
  text: string,
  maxRows = Number.POSITIVE_INFINITY,
  options: ReadOptions = {},
): ItemRows {
  const rows: RawRow[] = [];
  const variableNames = new Set<string>();
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
        rows.push({ line, ...jsonlItem(value as Record<string, unknown>, options, variableNames) });
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
  const names = variableNames.size > 0 ? { variableNames: [...variableNames] } : {};
  return { fileProblems: [], absentFields: [], rows, ...names };
}

/**
 * A JSONL row's keys that are no item field moved into its `variables` (null: no value). A key
 * that looks like a misspelt field stays, for the item schema to name with the field it means.
 */
function jsonlItem(
  row: Record<string, unknown>,
  options: ReadOptions,
  variableNames: Set<string>,
): Pick<RawRow, 'value' | 'problem' | 'col'> {
  let value: Record<string, unknown> | undefined;
  let variables: Record<string, unknown> | undefined;
  const unclaimed = ITEM_FIELDS.filter((field) => !Object.hasOwn(row, field));
  for (const [key, cell] of Object.entries(row)) {
    if (ITEM_FIELD_NAMES.has(key) || misspeltField(key, unclaimed, options) !== undefined) continue;
    if (cell !== null && typeof cell === 'object')
      return {
        col: 1,
        problem: `${key}: must be text, a number or true/false (a key that is no item field is a variable)`,
      };
    value ??= { ...row };
    delete value[key];
    variableNames.add(key);
    if (cell !== null) (variables ??= {})[key] = cell;
  }
  if (value === undefined) return { value: row };
  if (variables) value.variables = { ...variables, ...(value.variables as object | undefined) };
  return { value };
}
