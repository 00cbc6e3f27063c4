// The hand check of items-file rows (manifest/item-check.ts) against ItemSchema itself: on rows
// made of good and bad values of every field, it accepts exactly what the schema accepts
// (rows with params aside, always left to the schema) and returns what the schema returns.
import { describe, expect, it } from 'vitest';
import { acceptedItem } from '../manifest/item-check.js';
import { ItemSchema } from '../manifest/item-schema.js';

/** Good values of each field, then bad ones (of the right type and of others). */
const VALUES: Record<string, unknown[]> = {
  prompt_template: ['{name} on white', 'x'.repeat(32_000), '   ', '', 'x'.repeat(32_001), 3],
  model: ['flux-dev', '', 7, null],
  size: ['16:9', 'auto', '1:1', '16x9', '1234:1', ' 1:1', 16],
  resolution: ['1K', '4K', '8K', '1k', 1],
  n: [1, 10, 0, 11, 2.5, '2', Number.NaN],
  image_urls: [['a.png'], [], Array(15).fill('p.png'), Array(16).fill('p.png'), [''], 'a.png', [3]],
  language: ['en', 'ja', 'fr', 'EN'],
  params: [{ seed: 1 }],
  id: ['oak-chair', 'a'.repeat(128), 'a'.repeat(129), '-x', 'a b', 'é', 5],
  prompt: ['an oak chair', '\t\n', 'y'.repeat(32_001), ['a']],
  variables: [
    { colour: 'red', '2': 'two', weight: 3.5, new: true },
    {},
    { colour: null },
    { '': 'x' },
    { prompt: 'x' },
    { 'a{b': 'x' },
    { n: 'x' },
    { list: ['a'] },
    { big: Number.POSITIVE_INFINITY },
    ['x'],
    'colour=red',
  ],
  extra: ['a column that is no field'],
};

/** A small deterministic generator (mulberry32): the same rows on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function rows(count: number): unknown[] {
  const next = random(40);
  const good = Object.fromEntries(
    Object.entries(VALUES).map(([field, values]) => [
      field,
      values.filter((value) => field !== 'params' && ItemSchema.safeParse({ [field]: value }).success),
    ]),
  );
  const made: unknown[] = [null, [], 'a row', 3];
  for (let k = 0; k < count; k++) {
    const row: Record<string, unknown> = {};
    for (const [field, values] of Object.entries(VALUES)) {
      // Mostly absent or good, so that most rows pass and each bad value is met alone too.
      const draw = next();
      if (draw < 0.5) continue;
      const pool = draw < 0.9 && good[field]!.length > 0 ? good[field]! : values;
      row[field] = pool[Math.floor(next() * pool.length)];
    }
    made.push(row);
  }
  return made;
}

describe('the hand check of items-file rows', () => {
  it('accepts what ItemSchema accepts, returned as ItemSchema returns it', () => {
    let accepted = 0;
    for (const row of rows(4000)) {
      const parsed = ItemSchema.safeParse(row);
      const checked = acceptedItem(row);
      const hasParams = typeof row === 'object' && row !== null && 'params' in row;
      if (checked !== undefined) {
        accepted++;
        expect(parsed.success, JSON.stringify(row)).toBe(true);
        // The same fields in the same order, the same values.
        expect(Object.keys(checked)).toEqual(Object.keys(parsed.data!));
        expect(checked).toEqual(parsed.data);
      } else if (!hasParams) {
        expect(parsed.success, JSON.stringify(row)).toBe(false);
      }
    }
    // Rows the check passes are most of the good ones, not a handful.
    expect(accepted).toBeGreaterThan(500);
  });
});
