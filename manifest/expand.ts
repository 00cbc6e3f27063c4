// Every output of a manifest: each item, or with `variants` each (item, variant) pair the
// variant selects, with the id `<item>-<variant>`. Each takes its parameters from its item, else
// its variant, else `defaults`; its prompt is the first prompt_template of those rendered with
// the item's fields and variables, else the item's prompt. Problems are collected, each at the
// place to edit; a placeholder no item has a value for is said once, at its template.
import type { ImageProvider } from '../providers/types.js';
import { derivedItemId, plannedParams, type PlannedItem, type RunSettings } from './normalize.js';
import type { ItemEntry } from './item-entries.js';
import { MAX_PROMPT_CHARS } from './item-schema.js';

/** The longest item id (ITEM_ID_PATTERN): file names and workflow ids take it. */
const MAX_ITEM_ID_CHARS = 128;
import {
  asText,
  compileAt,
  imageSource,
  placeText,
  selects,
  type Layer,
  type VariantLayer,
} from './layers.js';
import {
  describeItem,
  duplicateProblem,
  MissingValues,
  placeOfField,
  productIdOf,
  valuesOf,
} from './output-values.js';
import type { ReferenceFiles } from './references.js';
import { unwritablePath } from './result-paths.js';
import { renderTemplate } from './template.js';

/** What `variants` made of the items: `plan` and `validate` show it. */
export interface Expansion {
  products: number;
  variants: { id: string; outputs: number }[];
}

export interface ExpandInput {
  entries: readonly ItemEntry[];
  defaults?: Layer;
  variants?: readonly VariantLayer[];
  known: ReadonlySet<string>;
  referenceFiles: ReferenceFiles;
  provider: ImageProvider;
  settings: RunSettings;
  /** No template anywhere: an item without a prompt is simply missing one. */
  promptRequired: boolean;
  problems: string[];
}

export function expandItems(input: ExpandInput): { items: PlannedItem[]; expansion?: Expansion } {
  const { entries, defaults, variants, settings, problems } = input;
  const items: PlannedItem[] = [];
  const missing = new MissingValues();
  // A default or a variant's field the provider cannot take is said once, at the field.
  const mappingProblems = new Set<string>();
  /** Each output id, with the entry and variant that made it first: entry * slots + variant. */
  const firstSeen = new Map<string, number>();
  const slots = variants?.length ?? 1;
  // A product may appear twice only for variants its rows' `where` keep apart (as retry-failed
  // writes a product's failed outputs). With unique products, outputs collide only when a
  // variant's id ends with "-<another's>" ("b-c" and "c": items "a" and "a-b" both make "a-b-c");
  // else 300,000 ids need no map.
  const products = variants && entries.map((entry) => productIdOf(entry.item));
  const productSet = new Set(products);
  const mayCollide =
    !variants ||
    productSet.size < entries.length ||
    variants.some((a) => variants.some((b) => a !== b && a.id.endsWith(`-${b.id}`)));
  const outputs = variants?.map(() => 0) ?? [];
  /** Entries already said to repeat a product: once each, not once per variant. */
  const repeated = new Set<number>();

  entries.forEach((entry, entryIndex) => {
    const { item } = entry;
    const product = products?.[entryIndex];
    const ownLayer = itemLayer(entry, input);
    const itemVariables = asText(item.variables);
    const ownImages = new Map<string, string[] | undefined>();
    (variants ?? [undefined]).forEach((variant, v) => {
      if (variant?.where && !selects(variant, entry, itemVariables)) return;
      const layers = [ownLayer, variant, defaults];
      const params = plannedParams(
        '',
        layers.map((layer) => layer?.params),
        input.provider.defaultModel,
      );
      const values = valuesOf(item, product, itemVariables, params, variant);
      const prompt = promptOf(entry, layers, values, missing, variant, input);
      if (prompt === undefined) return;
      const source = layers.find((layer) => layer?.params.image_urls !== undefined);
      const images = source && imagesOf(source, source === ownLayer ? ownImages : undefined);
      if (images === null) return;
      const planned: Omit<PlannedItem, 'id'> = { ...params, prompt };
      if (images?.length) planned.image_urls = images;
      else delete planned.image_urls;

      function imagesOf(
        layer: Layer,
        cache: Map<string, string[] | undefined> | undefined,
      ): string[] | undefined | null {
        const from = layer.images;
        if (from === undefined) return undefined;
        if (from === 'broken') return null;
        if ('resolved' in from) return from.resolved;
        const rendered: string[] = [];
        for (const template of from.templates) {
          const text = renderTemplate(template.compiled, values);
          if ('missing' in text) {
            for (const name of text.missing) missing.add(template, variant, name, entry);
            return null;
          }
          missing.use(template, variant, entry);
          rendered.push(text.text);
        }
        const key = rendered.join('\n');
        if (cache?.has(key)) return cache.get(key) ?? null;
        const resolved = input.referenceFiles.resolve(
          rendered,
          (k) => `${entry.at} ${from.templates[k]!.path} for ${describeItem(entry, variant)}`,
          problems,
        );
        cache?.set(key, resolved);
        return resolved ?? null;
      }

      const id = product !== undefined ? `${product}-${variant!.id}` : (item.id ?? derivedItemId(planned));
      // Both parts match the id pattern already: only the length is left to check.
      if (product !== undefined && id.length > MAX_ITEM_ID_CHARS) {
        problems.push(
          `${entry.at} id: "${product}" with variant "${variant!.id}" makes an id of ${id.length} characters, over ${MAX_ITEM_ID_CHARS}: shorten either`,
        );
        return;
      }
      const mapped = input.provider.mapRequest(planned);
      if ('problems' in mapped)
        for (const problem of mapped.problems)
          mappingProblems.add(`${placeText(placeOfField(layers, entry, problem.path))}: ${problem.message}`);
      const output: PlannedItem = { id, ...planned };
      if (product !== undefined) {
        output.product = product;
        output.variant = variant!.id;
      }
      // The row's own: one object for every variant of the item (a variant's are the same for all).
      if (itemVariables) output.variables = itemVariables;
      const unwritable = unwritablePath(settings.pathTemplate, settings.name, output);
      if (unwritable !== undefined) problems.push(`${entry.at} ${entry.label}: ${unwritable}`);
      const slot = entryIndex * slots + v;
      const earlier = mayCollide ? firstSeen.get(id) : undefined;
      const firstEntry = earlier === undefined ? undefined : Math.floor(earlier / slots);
      if (firstEntry !== undefined && product !== undefined && products?.[firstEntry] === product) {
        if (repeated.has(entryIndex)) return;
        repeated.add(entryIndex);
        const how = item.id ? 'duplicate id' : 'same fields as an earlier item, so the same derived id';
        problems.push(`${entry.at} id: ${how} "${product}" (first at ${entries[firstEntry]!.at})`);
        return;
      }
      if (earlier !== undefined) {
        problems.push(
          duplicateProblem(
            entry,
            id,
            entries[Math.floor(earlier / slots)]!,
            variants,
            earlier % slots,
            variant,
          ),
        );
        return;
      }
      if (mayCollide) firstSeen.set(id, slot);
      if (variant) outputs[v]!++;
      items.push(output);
    });
  });
  problems.push(...missing.problems(), ...mappingProblems);
  const expansion = variants && {
    products: productSet.size,
    variants: variants.map((variant, v) => ({ id: variant.id, outputs: outputs[v]! })),
  };
  return expansion ? { items, expansion } : { items };
}

/** The item's own block as a layer: its template compiled, its plain image_urls checked. */
function itemLayer(entry: ItemEntry, input: ExpandInput): Layer {
  const { item } = entry;
  const layer: Layer = { params: item, placeOf: entry.placeOf };
  if (item.prompt_template !== undefined) {
    const template = compileAt(
      item.prompt_template,
      entry.placeOf(['prompt_template']),
      input.known,
      input.problems,
    );
    layer.template = template === 'broken' ? template : { ...template, ofItem: true };
  }
  if (item.image_urls?.length) layer.images = imageSource(item.image_urls, entry.placeOf, input);
  return layer;
}

function promptOf(
  entry: ItemEntry,
  layers: readonly (Layer | undefined)[],
  values: (name: string) => string | undefined,
  missing: MissingValues,
  variant: VariantLayer | undefined,
  { problems, promptRequired }: Pick<ExpandInput, 'problems' | 'promptRequired'>,
): string | undefined {
  const template = layers.find((layer) => layer?.template !== undefined)?.template;
  if (template === 'broken') return undefined;
  if (template === undefined) {
    if (entry.item.prompt !== undefined) return entry.item.prompt;
    const why = promptRequired
      ? ''
      : `: the item has no prompt, and no prompt_template (its own, ${variant ? `variant "${variant.id}"'s` : "a variant's"} or the defaults') makes one`;
    if (!entry.promptSaidOnce) problems.push(`${placeText(entry.placeOf(['prompt']))}: is required${why}`);
    return undefined;
  }
  const rendered = renderTemplate(template.compiled, values);
  if ('missing' in rendered) {
    for (const name of rendered.missing) missing.add(template, variant, name, entry);
    return undefined;
  }
  missing.use(template, variant, entry);
  const where = `${template.ofItem ? template.at : entry.at} ${template.path}`;
  const whose = `${describeItem(entry, variant)}${template.ofItem ? '' : `; the template is at ${template.at}`}`;
  if (rendered.text.trim() === '') {
    problems.push(`${where}: renders an empty prompt for ${whose}`);
    return undefined;
  }
  if (rendered.text.length > MAX_PROMPT_CHARS) {
    problems.push(
      `${where}: renders a prompt of ${rendered.text.length} characters for ${whose}, over ${MAX_PROMPT_CHARS}`,
    );
    return undefined;
  }
  return rendered.text;
}
