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
  const fields = Object.entries(item)
    .filter(([name, value]) => !NOT_GENERATIVE.has(name) && value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const digest = createHash('sha256').update(JSON.stringify(fields)).digest('hex');
  return `${KEY_VERSION}-${digest}`;
}
