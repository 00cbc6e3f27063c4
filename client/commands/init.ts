// `pixelmill init CATALOG.csv [--out manifest.yaml]`: a starter manifest for a product export.
// Its items are the CSV's rows (items_file); every column that is no item field and has a value
// in every row is named in `defaults.prompt_template`, so the first `validate` passes and the team
// edits a sentence instead of writing one; columns with empty cells are listed, not named (a
// template naming one fails for the rows without it). Variants are written commented out. The
// header is checked as `validate` checks it (manifest/items-file.ts): a name given twice is refused.
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, relative, resolve, sep } from 'node:path';
import type { Command } from 'commander';
import { parse } from 'csv-parse/sync';
import { UserError } from '../../common/errors.js';
import { plural } from '../../common/words.js';
import { ITEM_FIELDS as ITEM_FIELD_LIST, readCsvRows } from '../../manifest/items-file.js';
import { MANIFEST_NAME_PATTERN } from '../../manifest/schema.js';
import { examples } from './with-run.js';

/** Columns that set an item's fields (id, prompt, size, ...) rather than being its variables. */
const ITEM_FIELDS: ReadonlySet<string> = new Set(ITEM_FIELD_LIST);
const SUBJECT = /name|title|product|bezeichnung|nom|nombre|titel/i;
const KEY = /^(sku|ean|gtin|code|ref|article|artikel|product_?id|item_?id)$/i;
const PHOTO = /photo|image|picture|img|bild|foto/i;

/** What init needs of a catalog: its columns, in order, with a first value and how many are empty. */
export interface CatalogColumn {
  name: string;
  sample: string;
  empty: number;
}

/** The CSV's columns, or the problems `validate` would find in its header (at file:line:col). */
export function catalogColumns(file: string, text: string): { columns: CatalogColumn[]; rows: number } {
  const problems = readCsvRows(text, 1)
    .fileProblems.filter(({ problem }) => /^CSV (header|syntax):/.test(problem))
    .map(({ line, col, problem }) => `${file}:${line}:${col ?? 1} ${problem}`);
  if (problems.length > 0)
    throw new UserError('init_catalog_invalid', `${file}: cannot read its header`, problems);
  const records = parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true }) as string[][];
  const [header = [], ...rows] = records;
  const columns = header.map((cell, k) => {
    const values = rows.map((row) => row[k] ?? '');
    return {
      name: cell.trim(),
      sample: values.find((value) => value !== '') ?? '',
      empty: values.filter((value) => value === '').length,
    };
  });
  const braced = columns.find(({ name }) => /[{}]/.test(name));
  if (braced)
    throw new UserError(
      'init_catalog_invalid',
      `${file}: column "${braced.name}" has braces, which no placeholder can name: rename it`,
    );
  return { columns: columns.filter(({ name }) => name !== ''), rows: rows.length };
}

/** Without accents, to recognise `catégorie` as a category. */
const plain = (text: string): string => text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');

/** A manifest name from the file's: letters, digits, ".", "_" and "-", at most 80. */
export function manifestName(file: string): string {
  const name = plain(basename(file, extname(file)))
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 80);
  return MANIFEST_NAME_PATTERN.test(name) ? name : 'catalog';
}

/** YAML double-quoted scalars are JSON strings: any column name or value, on one line. */
const q = (text: string): string => JSON.stringify(text);

interface StarterInput {
  /** The catalog, as the manifest refers to it (relative to the manifest). */
  itemsFile: string;
  name: string;
  columns: CatalogColumn[];
  rows: number;
}

/** The starter manifest's text, and the columns its template names. */
export function starterManifest({ itemsFile, name, columns, rows }: StarterInput): {
  text: string;
  named: string[];
} {
  const variables = columns.filter(({ name: column }) => !ITEM_FIELDS.has(column));
  const named = variables.filter(({ empty }) => empty === 0);
  const sparse = variables.filter(({ empty }) => empty > 0);
  const has = (field: string): boolean => columns.some((column) => column.name === field);
  // A prompt column filled in every row leads the template; with a gap, `{prompt}` would fail there.
  const withPrompt = columns.some(({ name: column, empty }) => column === 'prompt' && empty === 0);
  const subject = withPrompt
    ? undefined
    : (named.find(({ name: column }) => SUBJECT.test(column)) ??
      named.find(({ name: column }) => !KEY.test(column)) ??
      named[0]);
  const rest = named.filter((column) => column !== subject);
  if (!subject && !withPrompt)
    throw new UserError(
      'init_no_columns',
      `${itemsFile}: no column has a value in every row, so no template can describe its products`,
    );
  const opening = subject ? `A product photo of {${subject.name}}` : '{prompt}';
  const template = [opening, ...rest.map(({ name: column }) => `${column}: {${column}}`)].join('; ');
  const key = columns.find(({ name: column }) => KEY.test(column)) ?? columns[0];
  const photo = variables.find(
    ({ name: column, sample }) => PHOTO.test(column) || /\.(jpe?g|png|webp)$/i.test(sample),
  );
  const selector = rest.find(({ name: column }) => /categor|type|famil/i.test(plain(column))) ?? rest[0];
  const about = subject ? `{${subject.name}}` : '{prompt}';
  const lines = [
    `# A starter manifest for ${itemsFile} (${plural(rows, 'row')}), written by \`pixelmill init\`.`,
    '# Check it with `pixelmill validate`, see what a run would make and cost with `pixelmill plan`.',
    '# Reference: docs/manifest.md; walk-through: docs/from-a-product-export.md.',
    `name: ${q(name)}`,
    '# Each row is an item; its columns other than item fields are its variables, named in braces.',
    `items_file: ${q(itemsFile)}`,
    ...(has('id')
      ? []
      : [
          `# ${itemsFile} has no "id" column: items get ids derived from their fields (item-3f2a...).`,
          `# Rename the column that names a product${key ? ` (${q(key.name)}?)` : ''} to "id" for readable ids and file names.`,
        ]),
    'defaults:',
    `  # ${plural(named.length, 'column')} with a value in every row, in braces: edit the sentence, keep what describes a product.`,
    `  prompt_template: ${q(template)}`,
    ...(sparse.length > 0
      ? [
          `  # Not named (empty in some rows, where a template naming them would fail): ${sparse.map(({ name: column, empty }) => `${q(column)} (${empty} empty)`).join(', ')}.`,
        ]
      : []),
    ...(photo
      ? [
          `  # Reference photos from a column (files relative to this manifest, or URLs), checked when it loads:`,
          `  # image_urls: [${q(`{${photo.name}}`)}]`,
        ]
      : []),
    "  size: '1:1'",
    '  resolution: 1K',
    'output:',
    `  dir: ${q(`out/${name}`)}`,
    '',
    '# Variants: every product in several styles, each pair one output with the id <item>-<variant>;',
    "# a variant's prompt_template replaces the defaults'. Uncomment to make a shot per style:",
    '# variants:',
    '#   - id: studio',
    `#     prompt_template: ${q(`A product photo of ${about} on a white background, soft studio light`)}`,
    '#   - id: lifestyle',
    `#     prompt_template: ${q(`${about} in a bright, furnished room, natural window light`)}`,
    "#     size: '16:9'",
    '#   - id: detail',
    `#     prompt_template: ${q(`A close-up of ${about}, showing its material and finish`)}`,
    ...(selector
      ? [`#     where: { ${q(selector.name)}: ${q(selector.sample)} }  # only the items with this value`]
      : []),
    "# With variants, output.path_template may file each style apart: '{variant}/{id}_{index}.{ext}'.",
  ];
  return { text: `${lines.join('\n')}\n`, named: named.map(({ name: column }) => column) };
}

interface InitOptions {
  out: string;
  force?: boolean;
}

export function registerInitCommand(program: Command): void {
  program
    .command('init')
    .description('write a starter manifest for a product export: its columns named in a prompt template')
    .argument('<catalog>', 'the catalog, a CSV file with a header row')
    .option('--out <file>', 'the manifest to write', 'manifest.yaml')
    .option('--force', 'replace the file if it exists')
    .addHelpText(
      'after',
      examples('pixelmill init exports/products.csv', 'pixelmill init products.csv --out catalog.yaml') +
        '\n\nThen `pixelmill validate manifest.yaml`. A header naming a column twice is refused, as validate does.',
    )
    .action((catalog: string, options: InitOptions) => {
      if (extname(catalog).toLowerCase() !== '.csv')
        throw new UserError(
          'init_catalog_invalid',
          `${catalog}: init reads a CSV export (.csv) with a header row`,
        );
      const out = resolve(options.out);
      if (out === resolve(catalog))
        throw new UserError('init_out_is_catalog', `--out ${options.out} is the catalog itself`);
      let text: string;
      try {
        text = readFileSync(catalog, 'utf8');
      } catch (error) {
        throw new UserError(
          'init_catalog_unreadable',
          `${catalog}: ${(error as NodeJS.ErrnoException).code ?? 'cannot be read'}`,
        );
      }
      const { columns, rows } = catalogColumns(catalog, text);
      const itemsFile = relative(dirname(out), resolve(catalog)).split(sep).join('/');
      const starter = starterManifest({ itemsFile, name: manifestName(catalog), columns, rows });
      try {
        // `wx`: created only if absent, in one step (no window between a check and the write).
        writeFileSync(out, starter.text, { flag: options.force ? 'w' : 'wx' });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EEXIST')
          throw new UserError('init_out_exists', `${options.out} exists: --force replaces it`);
        throw new UserError('init_out_unwritable', `${options.out}: ${code ?? 'cannot be written'}`);
      }
      process.stdout.write(
        `pixelmill: wrote ${options.out}: ${plural(starter.named.length, 'column')} of ${catalog} in its prompt_template; next: pixelmill validate ${options.out}\n`,
      );
    });
}
