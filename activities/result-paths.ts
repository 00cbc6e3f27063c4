// Where an item's images go: the manifest's path_template filled in. `{index}` is the 0-based
// position of the image in the task's result (the same number as in the result URL), so
// `{id}_{index}.{ext}` gives `oak-chair_0.png`, `oak-chair_1.png`, ...
import type { PlannedItem } from '../manifest/normalize.js';

const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/webp': 'webp',
};
export const DEFAULT_EXTENSION = 'png';

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

/** Fills `{id}`, `{index}`, `{ext}`, `{name}`, `{size}` (":" as "x") and `{resolution}`. */
export function renderResultPath(template: string, fields: PathFields): string {
  const values: Record<string, string> = {
    id: fields.item.id,
    index: String(fields.index),
    ext: fields.ext,
    name: fields.name,
    size: fields.item.size.replaceAll(':', 'x'),
    resolution: fields.item.resolution,
  };
  // The manifest schema only lets these placeholders through; any other is left as written.
  return template.replace(/\{([a-z]+)\}/g, (whole, field: string) => values[field] ?? whole);
}
