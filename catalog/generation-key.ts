// An item's generation key: a hash of everything that decides its images (model, prompt, size,
// resolution, n, language, reference images, and any parameter added later), never its id nor
// the product, variant and variables it was made from (a template's rendered prompt is what
// counts: an edited template changes exactly the outputs whose prompts it changes). Two
// items with the same key are the same request to the provider, so a stored result of one is a
// result of the other: the key is what an incremental run looks its images up by.
import { createHash } from 'node:crypto';
import type { PlannedItem } from '../manifest/normalize.js';

/** Fields of a planned item that say which item it is or how a run treats it, not what it asks for. */
const NOT_GENERATIVE: ReadonlySet<string> = new Set([
  'id',
  'position',
  'reuse',
  'product',
  'variant',
  'variables',
]);

/** Bumped if the canonical form changes: every key changes with it, and so every item regenerates. */
const KEY_VERSION = 'g1';

export function generationKey(item: PlannedItem): string {
  // The JSON of the item's generative [name, value] pairs sorted by name, written out pair by
  // pair: the same text as JSON.stringify of the sorted entries, without an array per field
  // (a plan against a stored catalog works out a key for each of 300,000 outputs).
  const record = item as unknown as Record<string, unknown>;
  const names = Object.keys(record)
    .filter((name) => !NOT_GENERATIVE.has(name) && record[name] !== undefined)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let canonical = '[';
  for (const name of names) {
    if (canonical.length > 1) canonical += ',';
    canonical += `[${JSON.stringify(name)},${JSON.stringify(record[name])}]`;
  }
  const digest = createHash('sha256').update(`${canonical}]`).digest('hex');
  return `${KEY_VERSION}-${digest}`;
}
