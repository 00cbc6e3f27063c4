// docs/manifest.md, the manifest reference for people, generated from the same JSON Schema that
// editors use (`npm run schema` writes both; a test fails when either drifts).
import { forEachField, manifestJsonSchema, type JsonSchemaNode } from './json-schema.js';

function typeOf(field: JsonSchemaNode): string {
  if (field.anyOf) return field.anyOf.map(typeOf).join(' or ');
  if (Array.isArray(field.enum))
    return (field.enum as unknown[]).map((value) => `\`${String(value)}\``).join(', ');
  if (field.type === 'array') return `list of ${field.items ? typeOf(field.items) : 'values'}`;
  return String(field.type ?? 'any');
}

function rules(field: JsonSchemaNode): string {
  const parts: string[] = [];
  const add = (key: string, text: (value: unknown) => string): void => {
    if (field[key] !== undefined) parts.push(text(field[key]));
  };
  add('minimum', (v) => `>= ${String(v)}`);
  add('exclusiveMinimum', (v) => `> ${String(v)}`);
  add('maximum', (v) => (Number(v) >= Number.MAX_SAFE_INTEGER ? '' : `<= ${String(v)}`));
  add('minLength', (v) => (v === 1 ? 'not empty' : `at least ${String(v)} characters`));
  add('maxLength', (v) => `at most ${String(v)} characters`);
  add('maxItems', (v) => `at most ${String(v)} entries`);
  add('format', (v) => String(v));
  add('pattern', (v) => `matches \`${String(v)}\``);
  return parts.filter(Boolean).join('; ');
}

const cell = (text: string): string => text.replaceAll('\n', ' ').replaceAll('|', '\\|');

export function manifestReference(): string {
  const schema = manifestJsonSchema() as JsonSchemaNode;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const rows: string[] = [];
  forEachField(schema, (path, field) => {
    const name = required.has(path) ? `\`${path}\` (required)` : `\`${path}\``;
    rows.push(
      `| ${name} | ${cell(typeOf(field))} | ${cell(rules(field))} | ${cell((field.description ?? '').trim())} |`,
    );
  });
  return [
    '# Manifest reference',
    '',
    '<!-- Generated from the manifest schema by `npm run schema`; do not edit by hand. -->',
    '',
    'A manifest is a YAML file. Every field is listed here with its type, the rules the validator',
    'applies (`pixelmill validate FILE` reports every broken rule at once, as',
    '`file:line:col path: message`), and what it does. Editors with a YAML language server get the',
    'same information from `manifests/manifest.schema.json`. Examples: `manifests/demo.yaml`,',
    '`manifests/catalog-example.yaml`.',
    '',
    'The problems are listed by file, line and column. An unknown key or CSV column is named with the',
    'known field nearest to it (`promt: unknown field (did you mean "prompt"?)`); a CSV header\'s',
    'problem is said once, at its cell, not again for every row; an unclosed quote is shown where it',
    'opens.',
    '',
    '| field | type | rules | meaning |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}
