// The blocks an output takes its parameters from besides its item: `defaults` and its variant.
// Each is prepared once, where it is written: its prompt_template and templated image_urls
// compiled (a syntax error or a placeholder no item could fill said once, at the template), its
// plain image_urls checked once, a variant's `where` read into sets of values.
import { formatPath } from '../common/problems.js';
import type { ItemEntry } from './item-entries.js';
import type { ItemParams, ManifestVariant } from './item-schema.js';
import { MANIFEST_ROOT, type PathSegment, type Where } from './problems.js';
import type { ReferenceFiles } from './references.js';
import { didYouMean, nearestName } from './suggest.js';
import { compileTemplate, type CompiledTemplate } from './template.js';

/** Placeholders every item has (when it sets them, or its layers do), besides its variables. */
export const FIELD_PLACEHOLDERS = ['id', 'prompt', 'model', 'size', 'resolution', 'n', 'language'] as const;

/** Where a field was written: `file:line:col`, and its path (`variants[0].size`, `row 3 size`). */
export interface FieldPlace {
  at: string;
  path: string;
}

export const placeText = (place: FieldPlace): string => `${place.at} ${place.path}`;

/** A compiled template and where it was written. */
export interface TemplateAt extends FieldPlace {
  compiled: CompiledTemplate;
  /** An item's own template: its problems are said there, with no other place to name. */
  ofItem?: true;
}

/** A layer's image_urls: checked once when plain, rendered for each item when templated. */
export type ImageSource = { resolved: string[] } | { templates: TemplateAt[] };

export interface Layer {
  params: ItemParams;
  /** Where one of the block's fields is. */
  placeOf(path: readonly PathSegment[]): FieldPlace;
  /** Undefined: the block has none; `broken`: its problem is said, its outputs are not made. */
  template?: TemplateAt | 'broken';
  images?: ImageSource | 'broken';
}

export interface VariantLayer extends Layer {
  id: string;
  /** Its variables as text. */
  variables?: Record<string, string>;
  /** `where`: each column with the values it may have; every one must match. */
  where?: { column: string; values: ReadonlySet<string> }[];
}

export interface LayerContext {
  where: Where;
  /** Every name a placeholder may have in this manifest. */
  known: ReadonlySet<string>;
  referenceFiles: ReferenceFiles;
  problems: string[];
}

/** Values as templates see them: text. */
export function asText(
  values: Readonly<Record<string, unknown>> | undefined,
): Record<string, string> | undefined {
  let text: Record<string, string> | undefined;
  for (const name in values) (text ??= {})[name] = String(values[name]);
  return text;
}

/**
 * `text` compiled where `place` says it is written, or `broken` after its problems: its syntax,
 * and any placeholder that no item field, column or variable is named.
 */
export function compileAt(
  text: string,
  place: FieldPlace,
  known: ReadonlySet<string>,
  problems: string[],
  options: { globBraces?: boolean } = {},
): TemplateAt | 'broken' {
  const compiled = compileTemplate(text, options);
  const at = placeText(place);
  if ('problems' in compiled) {
    for (const problem of compiled.problems) problems.push(`${at}: ${problem}`);
    return 'broken';
  }
  const unknown = compiled.names.filter((name) => !known.has(name));
  for (const name of unknown) {
    problems.push(
      `${at}: unknown placeholder {${name}}${didYouMean(nearestName(name, known))}: no item field, column or variable has this name`,
    );
  }
  return unknown.length > 0 ? 'broken' : { compiled, ...place };
}

/** A block's image_urls: plain entries checked now, a list with a placeholder kept to render. */
export function imageSource(
  entries: readonly string[],
  placeOf: Layer['placeOf'],
  context: Pick<LayerContext, 'known' | 'referenceFiles' | 'problems'>,
): ImageSource | 'broken' {
  const templates: TemplateAt[] = [];
  for (const [k, entry] of entries.entries()) {
    const template = compileAt(entry, placeOf(['image_urls', k]), context.known, context.problems, {
      globBraces: true,
    });
    if (template === 'broken') return 'broken';
    templates.push(template);
  }
  if (templates.some((template) => template.compiled.names.length > 0)) return { templates };
  const plain = templates.map((template) => template.compiled.parts.join(''));
  const resolved = context.referenceFiles.resolve(
    plain,
    (k) => placeText(placeOf(['image_urls', k])),
    context.problems,
  );
  return resolved ? { resolved } : 'broken';
}

export function blockLayer(params: ItemParams, path: readonly PathSegment[], context: LayerContext): Layer {
  const placeOf = (field: readonly PathSegment[]): FieldPlace => ({
    at: context.where([...path, ...field]),
    path: formatPath([...path, ...field], MANIFEST_ROOT),
  });
  const layer: Layer = { params, placeOf };
  if (params.prompt_template !== undefined)
    layer.template = compileAt(
      params.prompt_template,
      placeOf(['prompt_template']),
      context.known,
      context.problems,
    );
  if (params.image_urls?.length) layer.images = imageSource(params.image_urls, placeOf, context);
  return layer;
}

/** The names `where` may select by: an item's own fields and its variables (not a variant's). */
export function variantLayer(
  variant: ManifestVariant,
  index: number,
  selectable: ReadonlySet<string>,
  context: LayerContext,
): VariantLayer {
  const { id, variables, where, ...params } = variant;
  const layer: VariantLayer = { ...blockLayer(params, ['variants', index], context), id };
  const text = asText(variables);
  if (text) layer.variables = text;
  if (where) {
    layer.where = [];
    for (const [column, wanted] of Object.entries(where)) {
      if (!selectable.has(column)) {
        const path = ['variants', index, 'where', column];
        context.problems.push(
          `${context.where(path, { atKey: true })} ${formatPath(path, MANIFEST_ROOT)}: unknown column${didYouMean(nearestName(column, selectable))}: no item field or column has this name`,
        );
        continue;
      }
      const values = (Array.isArray(wanted) ? wanted : [wanted]).map(String);
      layer.where.push({ column, values: new Set(values) });
    }
  }
  return layer;
}

/** Whether every column of the variant's `where` has one of its values for this item. */
export function selects(
  variant: VariantLayer,
  entry: ItemEntry,
  variables: Record<string, string> | undefined,
): boolean {
  for (const { column, values } of variant.where ?? []) {
    const own = variables?.[column] ?? (entry.item as Record<string, unknown>)[column];
    if (own === undefined || !values.has(String(own))) return false;
  }
  return true;
}
