// The product gallery's columns: the manifest's variants in the manifest's order, told from the
// items alone. Each product's outputs come in its variants' order, but a variant whose `where:`
// leaves out the first products is first seen late; so each product adds "u comes before v" for
// the variants it has in a row, and the columns are those constraints sorted, ties broken by
// first sight. A caller that knows the manifest's order passes it instead (GallerySummary.variants).

export class VariantOrder {
  /** Variants by first sight. */
  readonly #seen: string[] = [];
  readonly #index = new Map<string, number>();
  /** For each variant (by first-sight index), the variants that come right after it somewhere. */
  readonly #after: Set<number>[] = [];
  /** The last variant seen of each product, by the product's index. */
  readonly #lastOf: number[] = [];

  /** Notes output `variant` of product number `product` (products numbered from 0, in any order). */
  see(product: number, variant: string): void {
    let v = this.#index.get(variant);
    if (v === undefined) {
      v = this.#seen.length;
      this.#seen.push(variant);
      this.#index.set(variant, v);
      this.#after.push(new Set());
    }
    const last = this.#lastOf[product];
    if (last !== undefined && last !== v) this.#after[last]!.add(v);
    this.#lastOf[product] = v;
  }

  /**
   * The columns: `known` first (those of them seen or not), then the rest in the order the
   * products imply; variants no product orders stay in the order first seen, and so does
   * everything if the products contradict each other.
   */
  columns(known: readonly string[] = []): string[] {
    const sorted = this.#sorted() ?? [...this.#seen];
    const listed = new Set(known);
    return [...known, ...sorted.filter((variant) => !listed.has(variant))];
  }

  /** Kahn's sort, always taking the earliest seen of the variants free to go; undefined on a cycle. */
  #sorted(): string[] | undefined {
    const before = this.#seen.map(() => 0);
    for (const next of this.#after) for (const v of next) before[v]! += 1;
    const free = this.#seen.map((_, v) => v).filter((v) => before[v] === 0);
    const order: string[] = [];
    while (free.length > 0) {
      free.sort((a, b) => a - b);
      const v = free.shift()!;
      order.push(this.#seen[v]!);
      for (const next of this.#after[v]!) if (--before[next]! === 0) free.push(next);
    }
    return order.length === this.#seen.length ? order : undefined;
  }
}
