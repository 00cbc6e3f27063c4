// manifests/manifest.schema.json (for editors) must say what the validator does.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { manifestJsonSchema } from '../manifest/json-schema.js';
import { forEachField, type JsonSchemaNode } from '../manifest/json-schema.js';
import { loadManifest } from '../manifest/load.js';
import { manifestReference } from '../manifest/reference.js';

describe('manifest JSON Schema and examples', () => {
  it('the committed JSON Schema is the one generated from the zod schema (`npm run schema`)', () => {
    const committed = JSON.parse(
      readFileSync(new URL('../manifests/manifest.schema.json', import.meta.url), 'utf8'),
    ) as unknown;
    expect(committed).toEqual(manifestJsonSchema());
  });

  it('every field of the schema is documented, and docs/manifest.md is the generated reference', () => {
    const undocumented: string[] = [];
    forEachField(manifestJsonSchema() as JsonSchemaNode, (path, field) => {
      if (!field.description) undocumented.push(path);
    });
    expect(undocumented, 'add them to manifest/field-docs.ts').toEqual([]);
    const committed = readFileSync(new URL('../docs/manifest.md', import.meta.url), 'utf8');
    expect(committed, 'run `npm run schema`').toBe(manifestReference());
  });

  it.each(['demo.yaml', 'catalog-example.yaml'])('the example manifest %s is valid', (file) => {
    const loaded = loadManifest(new URL(`../manifests/${file}`, import.meta.url).pathname);
    expect(loaded.items.length).toBeGreaterThan(0);
  });
});
