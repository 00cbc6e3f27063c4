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
  let out = '';
  for (const part of compiledPath(template)) {
    if (part.field === undefined) out += part.text;
    else if (part.field === 'id') out += fields.item.id;
    else if (part.field === 'index') out += String(fields.index);
    else if (part.field === 'ext') out += fields.ext;
    else if (part.field === 'name') out += fields.name;
    else if (part.field === 'size') out += fields.item.size.replaceAll(':', 'x');
    else if (part.field === 'resolution') out += fields.item.resolution;
    else if (part.field === 'variant') out += fields.item.variant ?? '';
    // The manifest schema only lets those placeholders through; any other is left as written.
    else out += part.text;
  }
  return out;
}

/** The length of renderResultPath(template, fields), in UTF-16 units, without making the path. */
function renderedLength(template: string, fields: PathFields): number {
  let length = 0;
  for (const part of compiledPath(template)) {
    if (part.field === 'id') length += fields.item.id.length;
    else if (part.field === 'index') length += String(fields.index).length;
    else if (part.field === 'ext') length += fields.ext.length;
    else if (part.field === 'name') length += fields.name.length;
    else if (part.field === 'size') length += fields.item.size.length;
    else if (part.field === 'resolution') length += fields.item.resolution.length;
    else if (part.field === 'variant') length += (fields.item.variant ?? '').length;
    else length += part.text.length;
  }
  return length;
}

type PathPart = { text: string; field?: string };
const compiledPaths = new Map<string, PathPart[]>();

/** A template cut into text and placeholders once: a run renders it for every image. */
function compiledPath(template: string): PathPart[] {
  let parts = compiledPaths.get(template);
  if (parts === undefined) {
    parts = [];
    let last = 0;
    for (const match of template.matchAll(/\{([a-z]+)\}/g)) {
      if (match.index > last) parts.push({ text: template.slice(last, match.index) });
      parts.push({ text: match[0], field: match[1]! });
      last = match.index + match[0].length;
    }
    if (last < template.length) parts.push({ text: template.slice(last) });
    compiledPaths.set(template, parts);
  }
  return parts;
}

/**
 * Why `item`'s images could not be written where the template puts them, or undefined: checked
 * when the manifest is validated, before anything is paid for. (The template's own text is
 * checked by the schema: control characters, the state folder.)
 */
export function unwritablePath(template: string, name: string, item: PlannedItem): string | undefined {
  // The last image has the longest {index}.
  const fields = { name, item, index: item.n - 1, ext: LONGEST_EXTENSION };
  // A UTF-16 unit is at most 3 bytes of UTF-8: a short path has no long part (measured without
  // making the path: validate checks one for each of 300,000 outputs).
  if (renderedLength(template, fields) * 3 <= MAX_PATH_COMPONENT_BYTES) return undefined;
  const path = renderResultPath(template, fields);
  const long = path.split('/').find((part) => Buffer.byteLength(part) > MAX_PATH_COMPONENT_BYTES);
  if (long === undefined) return undefined;
  return (
    `output.path_template makes a file or folder name of ${Buffer.byteLength(long)} bytes for this item ` +
    `(at most ${MAX_PATH_COMPONENT_BYTES}): shorten the template or the id`
  );
}
