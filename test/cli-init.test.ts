// `pixelmill init CATALOG.csv`: a starter manifest from a product export's header. Odd headers
// (a BOM, spaces, padding, non-ASCII, empty cells, a trailing comma) become placeholders that
// `validate` accepts, end to end through the built CLI; a header naming a column twice is refused
// as validate refuses it, at its cell; an existing file is kept unless --force.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main as cliMain } from '../client/program.js';
import { CLI } from './support/cli.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

afterAll(() => removeTempDirs());

/** `pixelmill <args>` in this process, from `cwd`, with what it printed and its exit code. */
async function pixelmill(
  cwd: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const printed = { stdout: '', stderr: '' };
  const spies = (['stdout', 'stderr'] as const).map((stream) =>
    vi.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed[stream] += chunk.toString();
      return true;
    }),
  );
  const before = process.cwd();
  process.chdir(cwd);
  try {
    const code = await cliMain(['node', 'pixelmill', ...args]);
    return { code, ...printed };
  } finally {
    process.chdir(before);
    process.exitCode = undefined;
    for (const spy of spies) spy.mockRestore();
  }
}

/** The built CLI in a process of its own, as a user runs it. */
function pixelmillProcess(
  cwd: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A product export with odd headers: BOM, spaces, padding, non-ASCII, a trailing empty column. */
const ODD_CSV = [
  '\uFEFFid,Product Name,  Farbe/Colour  ,Größe (cm),材质,catégorie,photo,notes,',
  'oak-chair,Oak chair,natural,45 x 50,oak,chair,photos/oak-chair.jpg,,',
  'linen-sofa,"Linen sofa, 3 seats",sage green,210 x 90,linen,sofa,photos/linen-sofa.jpg,discontinued,',
  'brass-lamp,Brass lamp,brass,30 x 30,"brass, glass",lamp,photos/brass-lamp.jpg,,',
].join('\r\n');

describe('pixelmill init', () => {
  it('names every filled column of an odd header in the template, lists the sparse ones, comments the variants', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'Produkt Export (März).csv'), ODD_CSV);
    const result = await pixelmill(dir, 'init', 'Produkt Export (März).csv');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      'pixelmill: wrote manifest.yaml: 6 columns of Produkt Export (März).csv in its prompt_template; next: pixelmill validate manifest.yaml\n',
    );
    const text = readFileSync(join(dir, 'manifest.yaml'), 'utf8');
    const manifest = parseYaml(text) as Record<string, unknown>;
    expect(manifest).toEqual({
      name: 'Produkt-Export-Marz-',
      items_file: 'Produkt Export (März).csv',
      defaults: {
        prompt_template:
          'A product photo of {Product Name}; Farbe/Colour: {Farbe/Colour}; Größe (cm): {Größe (cm)}; 材质: {材质}; catégorie: {catégorie}; photo: {photo}',
        size: '1:1',
        resolution: '1K',
      },
      output: { dir: 'out/Produkt-Export-Marz-' },
    });
    expect(text).toContain(
      '# Not named (empty in some rows, where a template naming them would fail): "notes" (2 empty).',
    );
    expect(text).toContain('# image_urls: ["{photo}"]');
    // The variants, uncommented, are a valid block: three styles, one selected by a column's value.
    const variants = text
      .split('\n')
      .filter((line) => line.startsWith('# variants:') || line.startsWith('#   '))
      .map((line) => line.slice(2))
      .join('\n');
    expect(parseYaml(variants)).toEqual({
      variants: [
        {
          id: 'studio',
          prompt_template: 'A product photo of {Product Name} on a white background, soft studio light',
        },
        {
          id: 'lifestyle',
          prompt_template: '{Product Name} in a bright, furnished room, natural window light',
          size: '16:9',
        },
        {
          id: 'detail',
          prompt_template: 'A close-up of {Product Name}, showing its material and finish',
          where: { catégorie: 'chair' },
        },
      ],
    });
  });

  it('refuses a header naming a column twice, at its cell, as validate does', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'dupes.csv'), 'sku,name,colour, name \nA1,chair,red,again\n');
    const result = await pixelmill(dir, 'init', 'dupes.csv');
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'pixelmill: dupes.csv: cannot read its header\n  dupes.csv:1:17 CSV header: column "name" appears twice (columns 2 and 4)\n',
    );
    writeFileSync(join(dir, 'braces.csv'), 'sku,{name}\nA1,chair\n');
    expect((await pixelmill(dir, 'init', 'braces.csv')).stderr).toBe(
      'pixelmill: braces.csv: column "{name}" has braces, which no placeholder can name: rename it\n',
    );
  });

  it('keeps an existing file unless --force, and never writes over the catalog', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'products.csv'), 'sku,name\nA1,chair\n');
    writeFileSync(join(dir, 'catalog.yaml'), 'mine\n');
    const kept = await pixelmill(dir, 'init', 'products.csv', '--out', 'catalog.yaml');
    expect(kept.code).toBe(1);
    expect(kept.stderr).toBe('pixelmill: catalog.yaml exists: --force replaces it\n');
    expect(readFileSync(join(dir, 'catalog.yaml'), 'utf8')).toBe('mine\n');
    const forced = await pixelmill(dir, 'init', 'products.csv', '--out', 'catalog.yaml', '--force');
    expect(forced.code).toBe(0);
    const text = readFileSync(join(dir, 'catalog.yaml'), 'utf8');
    // The key is named too: without an id column it keeps prompts, and so derived ids, apart.
    expect(text).toContain('prompt_template: "A product photo of {name}; sku: {sku}"');
    // No id column: the comment says which column to rename.
    expect(text).toContain('Rename the column that names a product ("sku"?) to "id"');
    expect((await pixelmill(dir, 'init', 'products.csv', '--out', 'products.csv', '--force')).stderr).toBe(
      'pixelmill: --out products.csv is the catalog itself\n',
    );
    expect((await pixelmill(dir, 'init', 'missing.csv')).stderr).toBe('pixelmill: missing.csv: ENOENT\n');
    expect((await pixelmill(dir, 'init', 'catalog.yaml')).stderr).toBe(
      'pixelmill: catalog.yaml: init reads a CSV export (.csv) with a header row\n',
    );
  });

  it('leads with a prompt column filled in every row, and validate takes the result', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'prompts.csv'),
      'id,prompt,colour\nc1,an oak chair,natural\nc2,a linen sofa,sage\n',
    );
    expect((await pixelmill(dir, 'init', 'prompts.csv')).code).toBe(0);
    expect(readFileSync(join(dir, 'manifest.yaml'), 'utf8')).toContain(
      'prompt_template: "{prompt}; colour: {colour}"',
    );
    const valid = await pixelmill(dir, 'validate', 'manifest.yaml');
    expect(valid.stderr).toBe('');
    expect(valid.stdout).toBe('pixelmill: manifest.yaml: valid: "prompts", 2 items, 2 images\n');
    // A prompt missing in a row is no placeholder: the template describes every row without it.
    writeFileSync(join(dir, 'gaps.csv'), 'id,prompt,name\nc1,an oak chair,chair\nc2,,sofa\n');
    expect((await pixelmill(dir, 'init', 'gaps.csv', '--out', 'gaps.yaml')).code).toBe(0);
    expect(readFileSync(join(dir, 'gaps.yaml'), 'utf8')).toContain(
      'prompt_template: "A product photo of {name}"',
    );
    expect((await pixelmill(dir, 'validate', 'gaps.yaml')).code).toBe(0);
  });

  it('writes the manifest into another folder with items_file relative to it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'export.csv'), 'id,title\nx1,a stool\n');
    mkdirSync(join(dir, 'sub'));
    expect((await pixelmill(dir, 'init', 'export.csv', '--out', join(dir, 'sub', 'm.yaml'))).code).toBe(0);
    expect(readFileSync(join(dir, 'sub', 'm.yaml'), 'utf8')).toContain('items_file: "../export.csv"');
  });

  it('writes a manifest the built CLI validates, odd headers and all', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'export.csv'), ODD_CSV);
    const init = await pixelmillProcess(dir, 'init', 'export.csv');
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    const validate = await pixelmillProcess(dir, 'validate', 'manifest.yaml');
    expect(validate.stderr).toBe('');
    expect(validate.stdout).toBe('pixelmill: manifest.yaml: valid: "export", 3 items, 3 images\n');
    expect(validate.code).toBe(0);
    // Its variants uncommented are valid too: every product in two styles, the chair in a third.
    const manifest = readFileSync(join(dir, 'manifest.yaml'), 'utf8');
    writeFileSync(join(dir, 'variants.yaml'), manifest.replace(/^# (?=variants:|  )/gm, ''));
    const variants = await pixelmillProcess(dir, 'validate', 'variants.yaml');
    expect(variants.stderr).toBe('');
    // How validate words a count of variants is its own; the count is what matters here.
    expect(variants.stdout).toMatch(/^pixelmill: variants\.yaml: valid: "export", .*\b7 items, 7 images\n$/);
  }, 60_000);
});
