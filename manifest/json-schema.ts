// The JSON Schema of a manifest, generated from the zod schema so that editors (YAML language
// servers) validate and complete manifests exactly as pixelmill does.
import { z } from 'zod';
import { ManifestSchema } from './schema.js';

export function manifestJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(ManifestSchema, { io: 'input', unrepresentable: 'any' }),
    $id: 'https://pixelmill.dev/manifest.schema.json',
    title: 'pixelmill manifest',
  };
}
