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

/** How templates, variables and variants fit together: the fields' rows say each part. */
const TEMPLATES_AND_VARIANTS = [
  '## Templates and variants',
  '',
  'A product export becomes prompts without a script: every column of the items file that is not',
  'an item field is a variable of its item, `prompt_template` names columns in braces, and each',
  'variant makes one output of every item it selects:',
  '',
  '```yaml',
  'name: spring-catalog',
  'output: { dir: ./out, path_template: "{variant}/{id}_{index}.{ext}" }',
  'defaults:',
  '  prompt_template: "{name} in {colour} {material}, {style}"',
  '  image_urls: ["photos/{sku}.jpg"]',
  'variants:',
  '  - { id: studio, variables: { style: "studio shot on white" } }',
  '  - id: room',
  '    prompt_template: "{name} in a bright {room}, lifestyle photo"',
  '    size: "16:9"',
  '    variables: { room: living room }',
  '    where: { category: [chair, sofa, table] }',
  '  - { id: detail, prompt_template: "macro close-up of the {material} of the {name}", n: 2 }',
  'items_file: products.csv # id,sku,name,colour,material,category',
  '```',
  '',
  'Each product gives `<id>-studio`, `<id>-detail` and, for chairs, sofas and tables, `<id>-room`.',
  "An output's parameters are its item's, else its variant's, else `defaults`'; its prompt is the",
  "first `prompt_template` of those, rendered (`{prompt}` in it is the item's own prompt), else the",
  "item's prompt. `{{` and `}}` are literal braces.",
  '`pixelmill validate` refuses an unknown placeholder (once, at the template, with the column it',
  'most likely means), a value one item lacks (at its row, naming the item and the template), a',
  'placeholder no item has a value for (once, at the template), and a template that renders an',
  "empty prompt. `pixelmill plan` counts each variant's outputs to generate: an edited template",
  'regenerates exactly the outputs whose prompts it changes. `report.jsonl` gives each output its',
  '`product`, `variant` and `variables`.',
  '',
];

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
    ...TEMPLATES_AND_VARIANTS,
    '| field | type | rules | meaning |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}
