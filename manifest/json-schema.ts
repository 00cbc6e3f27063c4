// The JSON Schema of a manifest, generated from the zod schema so that editors (YAML language
// servers) validate and complete manifests exactly as pixelmill does, with each field's
// description from field-docs.ts.
import { z } from 'zod';
import { FIELD_DOCS } from './field-docs.js';
import { ManifestSchema } from './schema.js';

export type JsonSchemaNode = Record<string, unknown> & {
  type?: string | string[];
  properties?: Record<string, JsonSchemaNode>;
  items?: JsonSchemaNode;
  anyOf?: JsonSchemaNode[];
  description?: string;
};

/** Calls `visit` for every field of the schema with its path (`a.b`, `items[].c`), depth first. */
export function forEachField(
  node: JsonSchemaNode,
  visit: (path: string, field: JsonSchemaNode) => void,
  path = '',
): void {
  for (const variant of node.anyOf ?? []) forEachField(variant, visit, path);
  if (node.items && typeof node.items === 'object') forEachField(node.items, visit, `${path}[]`);
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const childPath = path === '' ? key : `${path}.${key}`;
    visit(childPath, child);
    forEachField(child, visit, childPath);
  }
}

export function manifestJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(ManifestSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode;
  forEachField(schema, (path, field) => {
    const description = FIELD_DOCS[path];
    if (description !== undefined) field.description = description;
  });
  return { ...schema, $id: 'https://pixelmill.dev/manifest.schema.json', title: 'pixelmill manifest' };
}
