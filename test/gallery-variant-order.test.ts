// The product gallery's columns (report/gallery-variant-order.ts): the manifest's variant order
// told from the items alone, whichever products a `where:` left a variant out of.
import { describe, expect, it } from 'vitest';
import { VariantOrder } from '../report/gallery-variant-order.js';

/** The columns of products given as their variants, in the order their outputs come. */
function columns(products: string[][], known?: string[]): string[] {
  const order = new VariantOrder();
  products.forEach((variants, product) => {
    for (const variant of variants) order.see(product, variant);
  });
  return order.columns(known);
}

describe('gallery variant order', () => {
  it('puts a variant first seen late where the other products place it', () => {
    expect(
      columns([
        ['studio', 'detail'],
        ['studio', 'lifestyle', 'detail'],
      ]),
    ).toEqual(['studio', 'lifestyle', 'detail']);
    expect(columns([['detail'], ['lifestyle', 'detail'], ['studio', 'lifestyle']])).toEqual([
      'studio',
      'lifestyle',
      'detail',
    ]);
  });

  it('reads products whose outputs come interleaved, variant by variant', () => {
    const order = new VariantOrder();
    for (const variant of ['a', 'b', 'c'])
      for (const product of [0, 1, 2]) if (!(variant === 'a' && product === 0)) order.see(product, variant);
    expect(order.columns()).toEqual(['a', 'b', 'c']);
  });

  it('keeps first sight where nothing orders two variants, or the products contradict each other', () => {
    expect(columns([['x'], ['y']])).toEqual(['x', 'y']);
    expect(
      columns([
        ['a', 'b'],
        ['b', 'a'],
      ]),
    ).toEqual(['a', 'b']);
  });

  it('puts the order a caller knows first, then the variants it did not list', () => {
    expect(
      columns(
        [
          ['studio', 'detail'],
          ['studio', 'extra'],
        ],
        ['detail', 'studio', 'unused'],
      ),
    ).toEqual(['detail', 'studio', 'unused', 'extra']);
  });
});
