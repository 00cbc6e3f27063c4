// What one output's templates are filled with, how its problems name it, and the placeholders
// its items had no value for: said per item, or once at the template when no item had one.
import { createHash } from 'node:crypto';
import type { ItemEntry } from './item-entries.js';
import type { ManifestItem } from './item-schema.js';
import type { Layer, TemplateAt, VariantLayer } from './layers.js';
import type { PlannedItem } from './normalize.js';
import type { PathSegment } from './problems.js';
import type { PlaceholderValues } from './template.js';

/**
 * A product's id: its own, or one derived from everything written for it (its fields and
 * variables), so that the same row keeps the same id from run to run.
 */
export function productIdOf(item: ManifestItem): string {
  if (item.id !== undefined) return item.id;
  const sorted = (value: object): [string, unknown][] =>
    Object.entries(value)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, field]) => [
        name,
        field && typeof field === 'object' && !Array.isArray(field) ? sorted(field) : field,
      ]);
  return `item-${createHash('sha256')
    .update(JSON.stringify(sorted(item)))
    .digest('hex')
    .slice(0, 16)}`;
}

/**
 * The placeholders' values for one output: `{variant}` its variant's id, the item's variables,
 * its fields (`{id}` the product's id, `productId` where variants make products, worked out once
 * per item; `{model}`, `{size}`... as the output resolves them), then its variant's variables.
 */
export function valuesOf(
  item: ManifestItem,
  productId: string | undefined,
  itemVariables: Readonly<Record<string, string>> | undefined,
  params: Omit<PlannedItem, 'id'>,
  variant: VariantLayer | undefined,
): PlaceholderValues {
  return (name) => {
    if (name === 'variant' && variant) return variant.id;
    const own = itemVariables?.[name];
    if (own !== undefined) return own;
    switch (name) {
      case 'id':
        return productId ?? item.id;
      case 'prompt':
        return item.prompt;
      case 'model':
        return params.model;
      case 'size':
        return params.size;
      case 'resolution':
        return params.resolution;
      case 'n':
        return String(params.n);
      case 'language':
        return params.language;
    }
    return variant?.variables?.[name];
  };
}

/** `item "sku-9" (row 4, variant "studio")`, or its place alone when it has no id of its own. */
export function describeItem(entry: ItemEntry, variant?: { id: string }): string {
  const also = variant ? `, variant "${variant.id}"` : '';
  return entry.item.id !== undefined
    ? `item "${entry.item.id}" (${entry.label}${also})`
    : `${entry.label}${variant ? ` (variant "${variant.id}")` : ''}`;
}

interface Uses {
  template: TemplateAt;
  variant: string | undefined;
  entries: number;
  last: ItemEntry | undefined;
  /** Per placeholder: the items without a value for it. */
  missing: Map<string, ItemEntry[]>;
}

/** Placeholders without a value, by template and variant, to be said as few times as is true. */
export class MissingValues {
  /** By template, then by variant: a template object stands for one place (cheaper than its text). */
  readonly #byTemplate = new Map<TemplateAt, Map<string | undefined, Uses>>();

  get #uses(): Uses[] {
    return [...this.#byTemplate.values()].flatMap((byVariant) => [...byVariant.values()]);
  }

  #of(template: TemplateAt, variant: VariantLayer | undefined, entry: ItemEntry): Uses {
    let byVariant = this.#byTemplate.get(template);
    if (byVariant === undefined) this.#byTemplate.set(template, (byVariant = new Map()));
    let uses = byVariant.get(variant?.id);
    if (uses === undefined) {
      uses = { template, variant: variant?.id, entries: 0, last: undefined, missing: new Map() };
      byVariant.set(variant?.id, uses);
    }
    if (uses.last !== entry) [uses.entries, uses.last] = [uses.entries + 1, entry];
    return uses;
  }

  /** `entry` rendered `template` (for `variant`). */
  use(template: TemplateAt, variant: VariantLayer | undefined, entry: ItemEntry): void {
    this.#of(template, variant, entry);
  }

  /** `entry` has no value for `{name}` of `template`. */
  add(template: TemplateAt, variant: VariantLayer | undefined, name: string, entry: ItemEntry): void {
    const uses = this.#of(template, variant, entry);
    const items = uses.missing.get(name) ?? [];
    if (items.at(-1) !== entry) items.push(entry);
    uses.missing.set(name, items);
  }

  problems(): string[] {
    const lines = new Set<string>();
    /** By template and placeholder: whether every variant's items all lack it. */
    const everywhere = new Map<string, boolean>();
    const all = (uses: Uses, items: ItemEntry[] | undefined): boolean =>
      uses.entries > 1 && items?.length === uses.entries;
    const names = new Set([...this.#uses].flatMap((uses) => [...uses.missing.keys()]));
    for (const uses of this.#uses)
      for (const name of names) {
        const key = `${uses.template.at} ${uses.template.path}\u0000${name}`;
        everywhere.set(key, (everywhere.get(key) ?? true) && all(uses, uses.missing.get(name)));
      }
    for (const uses of this.#uses) {
      const { template } = uses;
      for (const [name, items] of uses.missing) {
        if (everywhere.get(`${template.at} ${template.path}\u0000${name}`)) {
          lines.add(`${template.at} ${template.path}: no item has a value for {${name}}`);
        } else if (all(uses, items)) {
          lines.add(
            `${template.at} ${template.path}: no item of variant "${uses.variant}" has a value for {${name}}`,
          );
        } else {
          for (const entry of items) {
            const [at, elsewhere] = template.ofItem
              ? [template.at, '']
              : [entry.at, `; the template is at ${template.at}`];
            lines.add(`${at} ${template.path}: no value for {${name}} in ${describeItem(entry)}${elsewhere}`);
          }
        }
      }
    }
    return [...lines];
  }
}

/** Where the field a mapping problem names was set: the item, else its variant, else `defaults`. */
export function placeOfField(
  layers: readonly (Layer | undefined)[],
  entry: ItemEntry,
  path: readonly PathSegment[],
) {
  // `params` merge key by key: a params key is a layer's only if it sets that key.
  const depth = path[0] === 'params' && path.length > 1 ? 2 : 1;
  const key = path.slice(0, depth);
  const sets = (layer: Layer): boolean =>
    key.reduce<unknown>(
      (node, segment) =>
        node !== null && typeof node === 'object' && Object.hasOwn(node, segment)
          ? (node as Record<PropertyKey, unknown>)[segment]
          : undefined,
      layer.params,
    ) !== undefined;
  const layer = key.length === depth ? layers.find((candidate) => candidate && sets(candidate)) : undefined;
  return layer ? layer.placeOf(path) : entry.placeOf(path);
}

export function duplicateProblem(
  entry: ItemEntry,
  id: string,
  first: ItemEntry,
  variants: readonly VariantLayer[] | undefined,
  firstSlot: number,
  variant: VariantLayer | undefined,
): string {
  if (!variant) {
    const how = entry.item.id
      ? 'duplicate id'
      : 'same prompt and parameters as an earlier item, so the same derived id';
    return `${entry.at} id: ${how} "${id}" (first at ${first.at})`;
  }
  const firstVariant = variants?.[firstSlot]?.id ?? '';
  return (
    `${entry.at} id: "${id}" of item "${productIdOf(entry.item)}" and variant "${variant.id}" is also the id of ` +
    `item "${productIdOf(first.item)}" and variant "${firstVariant}" (at ${first.at}): rename an item or a variant`
  );
}
