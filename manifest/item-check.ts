// The usual row of an items file checked by hand: what ItemSchema would accept and how it would
// return it, without zod, which took about a second for 100,000 rows (BENCHMARKS.md, issue #40).
// Anything unusual (params, a field of another type, any problem) is left to ItemSchema, which
// words the problems: this check never decides a row is wrong, only that it is right.
import { LANGUAGES, MAX_IMAGE_URLS, RESOLUTIONS } from '../common/generation.js';
import {
  ITEM_FIELD_NAMES,
  ITEM_ID_PATTERN,
  MAX_PROMPT_CHARS,
  SIZE_PATTERN,
  type ManifestItem,
} from './item-schema.js';

type Check = (value: unknown) => boolean;

const isPrompt: Check = (value) =>
  typeof value === 'string' && value.length <= MAX_PROMPT_CHARS && value.trim().length > 0;
const isOneOf =
  (values: readonly string[]): Check =>
  (value) =>
    typeof value === 'string' && values.includes(value);

/** A variable's value: text, a finite number or true/false. */
const isScalar = (value: unknown): boolean =>
  typeof value === 'string' ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value));

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

function isVariables(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  for (const name of Object.keys(value)) {
    if (name === '' || name === '__proto__' || ITEM_FIELD_NAMES.has(name) || /[{}]/.test(name)) return false;
    if (!isScalar(value[name])) return false;
  }
  return true;
}

/**
 * Each field's check, in the schema's order (zod returns an item's fields in that order). A field
 * the schema gains and this map lacks sends its rows to zod: slower, never wrong.
 */
const CHECKS: ReadonlyMap<string, Check> = new Map<keyof ManifestItem, Check>([
  ['prompt_template', isPrompt],
  ['model', (value) => typeof value === 'string' && value.length > 0],
  ['size', (value) => typeof value === 'string' && SIZE_PATTERN.test(value)],
  ['resolution', isOneOf(RESOLUTIONS)],
  ['n', (value) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 10],
  [
    'image_urls',
    (value) =>
      Array.isArray(value) &&
      value.length <= MAX_IMAGE_URLS &&
      value.every((url) => typeof url === 'string' && url.length > 0),
  ],
  ['language', isOneOf(LANGUAGES)],
  ['params', () => false],
  ['id', (value) => typeof value === 'string' && ITEM_ID_PATTERN.test(value)],
  ['prompt', isPrompt],
  ['variables', isVariables],
]);

/**
 * `row` as ItemSchema would return it (its fields in the schema's order), when the schema
 * certainly accepts it; undefined when ItemSchema must decide (and say what is wrong).
 */
export function acceptedItem(row: unknown): ManifestItem | undefined {
  if (!isPlainObject(row)) return undefined;
  const fields = Object.keys(row);
  for (const field of fields) if (!CHECKS.has(field) || row[field] === undefined) return undefined;
  let k = 0;
  let inOrder = true;
  for (const [field, check] of CHECKS) {
    const value = row[field];
    if (value === undefined) continue;
    if (!check(value)) return undefined;
    inOrder &&= fields[k++] === field;
  }
  // A row already in the schema's order is its own item: one object less for each of 100,000.
  if (inOrder) return row as ManifestItem;
  const item: Record<string, unknown> = {};
  for (const field of CHECKS.keys()) if (row[field] !== undefined) item[field] = row[field];
  return item as ManifestItem;
}
