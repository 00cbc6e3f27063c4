// Where an item's images go: the manifest's path_template filled in. `{index}` is the 0-based
// position of the image in the task's result (the same number as in the result URL), so
// `{id}_{index}.{ext}` gives `oak-chair_0.png`, `oak-chair_1.png`, ...
import type { PlannedItem } from './normalize.js';

const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/webp': 'webp',
};
export const DEFAULT_EXTENSION = 'png';
/** The longest extension a result can get: what validation renders paths with. */
const LONGEST_EXTENSION = 'jpeg';
/** The longest file or folder name common file systems take (ext4, APFS, NTFS), in bytes. */
export const MAX_PATH_COMPONENT_BYTES = 255;

/** The file extension for a Content-Type; unknown or absent types are stored as png. */
export function extensionFor(contentType: string | undefined): string {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return (type !== undefined && EXTENSIONS[type]) || DEFAULT_EXTENSION;
}

export interface PathFields {
  name: string;
  item: PlannedItem;
  index: number;
  ext: string;
}

/**
 * Fills `{id}`, `{index}`, `{ext}`, `{name}`, `{size}` (":" as "x"), `{resolution}` and
 * `{variant}` (the schema allows it only in a manifest with variants, where every item has one).
 */
export function renderResultPath(template: string, fields: PathFields): string {
  const values: Record<string, string> = {
    id: fields.item.id,
    index: String(fields.index),
    ext: fields.ext,
    name: fields.name,
    size: fields.item.size.replaceAll(':', 'x'),
    resolution: fields.item.resolution,
    variant: fields.item.variant ?? '',
  };
  // The manifest schema only lets these placeholders through; any other is left as written.
  return template.replace(/\{([a-z]+)\}/g, (whole, field: string) => values[field] ?? whole);
}

/**
 * Why `item`'s images could not be written where the template puts them, or undefined: checked
 * when the manifest is validated, before anything is paid for. (The template's own text is
 * checked by the schema: control characters, the state folder.)
 */
export function unwritablePath(template: string, name: string, item: PlannedItem): string | undefined {
  // The last image has the longest {index}.
  const path = renderResultPath(template, { name, item, index: item.n - 1, ext: LONGEST_EXTENSION });
  const long = path.split('/').find((part) => Buffer.byteLength(part) > MAX_PATH_COMPONENT_BYTES);
  if (long === undefined) return undefined;
  return (
    `output.path_template makes a file or folder name of ${Buffer.byteLength(long)} bytes for this item ` +
    `(at most ${MAX_PATH_COMPONENT_BYTES}): shorten the template or the id`
  );
}
