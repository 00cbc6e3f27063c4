// Every output of a manifest: each item, or with `variants` each (item, variant) pair the
// variant selects, with the id `<item>-<variant>`. Each takes its parameters from its item, else
// its variant, else `defaults`; its prompt is the first prompt_template of those rendered with
// the item's fields and variables, else the item's prompt. Problems are collected, each at the
// place to edit; a placeholder no item has a value for is said once, at its template.
import type { ImageProvider } from '../providers/types.js';
import { derivedItemId, plannedParams, type PlannedItem, type RunSettings } from './normalize.js';
import type { ItemEntry } from './item-entries.js';
import type { PathSegment } from './problems.js';
import { MAX_PROMPT_CHARS } from './item-schema.js';

/** The longest item id (ITEM_ID_PATTERN): file names and workflow ids take it. */
const MAX_ITEM_ID_CHARS = 128;
import {
  asText,
  compileAt,
  imageSource,
  placeText,
  selects,
  type FieldPlace,
  type Layer,
  type TemplateAt,
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
import { renderTemplate, type PlaceholderValues } from './template.js';

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
  const defaultModel = input.provider.defaultModel;
  // What each variant (or the manifest, without variants) gives an item that sets no parameter
  // of its own: worked out once, not for each of 300,000 outputs.
  const inherited = (variants ?? [undefined]).map((variant) =>
    plannedParams('', [variant?.params, defaults?.params], defaultModel),
  );

  entries.forEach((entry, entryIndex) => {
    const { item } = entry;
    const product = products?.[entryIndex];
    const ownLayer = itemLayer(entry, input);
    const ownParams = PARAM_FIELDS.some((field) => item[field] !== undefined);
    const itemVariables = asText(item.variables);
    let ownImages: Map<string, string[] | undefined> | undefined;
    (variants ?? [undefined]).forEach((variant, v) => {
      if (variant?.where && !selects(variant, entry, itemVariables)) return;
      const params = ownParams
        ? plannedParams('', [item, variant?.params, defaults?.params], defaultModel)
        : inherited[v]!;
      const values = valuesOf(item, product, itemVariables, params, variant);
      const template = firstOf(ownLayer.template, variant?.template, defaults?.template);
      const prompt = promptOf(entry, template, values, missing, variant, input);
      if (prompt === undefined) return;
      const source = [ownLayer, variant, defaults].find((layer) => layer?.params.image_urls !== undefined);
      const images =
        source &&
        imagesOf(
          source,
          values,
          source === ownLayer ? (ownImages ??= new Map()) : undefined,
          entry,
          variant,
          {
            missing,
            referenceFiles: input.referenceFiles,
            problems,
          },
        );
      if (images === null) return;
      // Its fields in the order plans, reports and generation keys have always had them.
      const output: PlannedItem = {
        id: '',
        prompt,
        model: params.model,
        size: params.size,
        resolution: params.resolution,
        n: params.n,
      };
      if (images?.length) output.image_urls = images;
      if (params.language) output.language = params.language;
      if (params.params) output.params = ownParams ? params.params : { ...params.params };
      output.id = product !== undefined ? `${product}-${variant!.id}` : (item.id ?? derivedItemId(output));
      const { id } = output;
      // Both parts match the id pattern already: only the length is left to check.
      if (product !== undefined && id.length > MAX_ITEM_ID_CHARS) {
        problems.push(
          `${entry.at} id: "${product}" with variant "${variant!.id}" makes an id of ${id.length} characters, over ${MAX_ITEM_ID_CHARS}: shorten either`,
        );
        return;
      }
      const mapped = input.provider.mapRequest(output);
      if ('problems' in mapped)
        for (const problem of mapped.problems) {
          const place = placeOfField([ownLayer, variant, defaults], entry, problem.path);
          mappingProblems.add(`${placeText(place)}: ${problem.message}`);
        }
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

/** The item fields plannedParams reads: an item that sets none takes its variant's as they are. */
const PARAM_FIELDS = ['model', 'size', 'resolution', 'n', 'image_urls', 'language', 'params'] as const;

/** The first of a field's values that is set, the item's before its variant's before the defaults'. */
function firstOf<T>(own: T | undefined, ofVariant: T | undefined, ofDefaults: T | undefined): T | undefined {
  return own !== undefined ? own : ofVariant !== undefined ? ofVariant : ofDefaults;
}

/**
 * The reference images `layer` gives one output: undefined when it has none, null when they
 * could not be made (the problem is said), else its plain list or its templates rendered and
 * checked (once per distinct list for an item's own, through `cache`).
 */
function imagesOf(
  layer: Layer,
  values: PlaceholderValues,
  cache: Map<string, string[] | undefined> | undefined,
  entry: ItemEntry,
  variant: VariantLayer | undefined,
  context: Pick<ExpandInput, 'referenceFiles' | 'problems'> & { missing: MissingValues },
): string[] | undefined | null {
  const from = layer.images;
  if (from === undefined) return undefined;
  if (from === 'broken') return null;
  if ('resolved' in from) return from.resolved;
  const rendered: string[] = [];
  for (const template of from.templates) {
    const text = renderTemplate(template.compiled, values);
    if ('missing' in text) {
      for (const name of text.missing) context.missing.add(template, variant, name, entry);
      return null;
    }
    context.missing.use(template, variant, entry);
    rendered.push(text.text);
  }
  const key = rendered.join('\n');
  if (cache?.has(key)) return cache.get(key) ?? null;
  const resolved = context.referenceFiles.resolve(
    rendered,
    (k) => `${entry.at} ${from.templates[k]!.path} for ${describeItem(entry, variant)}`,
    context.problems,
  );
  cache?.set(key, resolved);
  return resolved ?? null;
}

/** The item's own block as a layer: its template compiled, its plain image_urls checked. */
function itemLayer(entry: ItemEntry, input: ExpandInput): Layer {
  const { item } = entry;
  const placeOf = (path: readonly PathSegment[]): FieldPlace => entry.placeOf(path);
  const layer: Layer = { params: item, placeOf };
  if (item.prompt_template !== undefined) {
    const template = compileAt(
      item.prompt_template,
      entry.placeOf(['prompt_template']),
      input.known,
      input.problems,
    );
    layer.template = template === 'broken' ? template : { ...template, ofItem: true };
  }
  if (item.image_urls?.length) layer.images = imageSource(item.image_urls, placeOf, input);
  return layer;
}

function promptOf(
  entry: ItemEntry,
  template: TemplateAt | 'broken' | undefined,
  values: PlaceholderValues,
  missing: MissingValues,
  variant: VariantLayer | undefined,
  { problems, promptRequired }: Pick<ExpandInput, 'problems' | 'promptRequired'>,
): string | undefined {
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
  const { text } = rendered;
  if (text.length > 0 && text.length <= MAX_PROMPT_CHARS && text.trim() !== '') return text;
  // Worded only for a problem: 300,000 good prompts need none of it.
  const where = `${template.ofItem ? template.at : entry.at} ${template.path}`;
  const whose = `${describeItem(entry, variant)}${template.ofItem ? '' : `; the template is at ${template.at}`}`;
  if (text.trim() === '') {
    problems.push(`${where}: renders an empty prompt for ${whose}`);
    return undefined;
  }
  problems.push(
    `${where}: renders a prompt of ${text.length} characters for ${whose}, over ${MAX_PROMPT_CHARS}`,
  );
  return undefined;
}
