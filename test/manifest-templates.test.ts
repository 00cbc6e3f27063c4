// Prompt templates (issue #40): `{column}` placeholders filled from an item's fields and its row's
// other columns, `{{`/`}}` literal braces, and each kind of template problem at its file:line:col,
// naming the item, the template and the placeholder.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generationKey } from '../catalog/generation-key.js';
import { loadManifest } from '../manifest/load.js';
import { compileTemplate, renderTemplate } from '../manifest/template.js';
import { problemsOf } from './support/manifest-problems.js';

/** A PNG's first bytes: what the reference check sniffs. */
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

function fixture(files: Record<string, string | Buffer>): string {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-templates-'));
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return dir;
}

/** Problems with the temp folder cut off: `m.yaml:3:5 ...`. */
const problems = (dir: string, file = 'm.yaml'): string[] =>
  problemsOf(join(dir, file)).map((line) => line.replaceAll(`${dir}/`, ''));

describe('templates', () => {
  it('compiles placeholders and literal braces, and says a lone or unclosed brace', () => {
    const compiled = compileTemplate('{{studio}} shot of {name} in {colour}, {{ {name} }}');
    if ('problems' in compiled) throw new Error(compiled.problems.join('; '));
    expect(compiled.names).toEqual(['name', 'colour']);
    const values: Record<string, string> = { name: 'oak chair', colour: 'red' };
    expect(renderTemplate(compiled, (name) => values[name])).toEqual({
      text: '{studio} shot of oak chair in red, { oak chair }',
    });
    expect(renderTemplate(compiled, (name) => (name === 'name' ? 'x' : undefined))).toEqual({
      missing: ['colour'],
    });
    expect(compileTemplate('a } b')).toEqual({
      problems: ['a lone "}" at character 3: write "}}" for a literal brace'],
    });
    expect(compileTemplate('a {name b')).toEqual({
      problems: ['an unclosed "{" at character 3: write "{{" for a literal brace'],
    });
    // In image_urls, a glob's alternation stays a glob.
    expect(compileTemplate('photos/{sku}-{1,2}.png', { globBraces: true })).toMatchObject({ names: ['sku'] });
  });

  it('fills a prompt from the row: its fields and its other columns, which become its variables', () => {
    const dir = fixture({
      'm.yaml': [
        'name: t',
        'defaults: { size: "3:4", prompt_template: "{name} in {colour} {material}, {size}, {{studio}}" }',
        'items_file: cat.csv',
      ].join('\n'),
      'cat.csv': 'id,name,colour,material\nc1,Oak chair,red,oak\nc2,Pine table,natural,pine\n',
    });
    const { items, expansion } = loadManifest(join(dir, 'm.yaml'));
    expect(expansion).toBeUndefined();
    expect(items).toEqual([
      {
        id: 'c1',
        prompt: 'Oak chair in red oak, 3:4, {studio}',
        model: expect.any(String),
        size: '3:4',
        resolution: '1K',
        n: 1,
        variables: { name: 'Oak chair', colour: 'red', material: 'oak' },
      },
      expect.objectContaining({ id: 'c2', prompt: 'Pine table in natural pine, 3:4, {studio}' }),
    ]);
    // The variables say where the prompt came from; the rendered prompt alone decides the images.
    const { variables: _variables, ...bare } = items[0]!;
    expect(generationKey(items[0]!)).toBe(generationKey(bare));
  });

  it('takes the item template over the defaults, and {prompt} is the item prompt', () => {
    const dir = fixture({
      'm.yaml': [
        'name: t',
        'defaults: { prompt_template: "studio photo: {prompt}" }',
        'items:',
        '  - { id: a, prompt: an oak chair }',
        '  - { id: b, prompt: a lamp, prompt_template: "{prompt} at dusk, {tone}", variables: { tone: warm } }',
      ].join('\n'),
    });
    expect(loadManifest(join(dir, 'm.yaml')).items.map((item) => item.prompt)).toEqual([
      'studio photo: an oak chair',
      'a lamp at dusk, warm',
    ]);
  });

  it('says an unknown placeholder once, at the template, with the column it likely means', () => {
    const dir = fixture({
      'm.yaml': [
        'name: t',
        'defaults:',
        '  prompt_template: "{name} in {color}"',
        'items_file: cat.csv',
      ].join('\n'),
      'cat.csv': 'id,name,colour\nc1,chair,red\nc2,table,blue\n',
    });
    expect(problems(dir)).toEqual([
      'm.yaml:3:20 defaults.prompt_template: unknown placeholder {color} (did you mean "colour"?): no item field, column or variable has this name',
    ]);
  });

  it('says a value missing for one item at its row, naming the item, the template and the placeholder', () => {
    const dir = fixture({
      'm.yaml': [
        'name: t',
        'defaults:',
        '  prompt_template: "{name} in {colour}"',
        'items_file: cat.csv',
      ].join('\n'),
      'cat.csv': 'id,name,colour\nc1,chair,red\nc2,table,\nc3,lamp,blue\n',
    });
    expect(problems(dir)).toEqual([
      'cat.csv:3:1 defaults.prompt_template: no value for {colour} in item "c2" (row 2); the template is at m.yaml:3:20',
    ]);
  });

  it('says once, at the template, a placeholder no item has a value for', () => {
    const dir = fixture({
      'm.yaml': [
        'name: t',
        'defaults:',
        '  prompt_template: "{name} in {colour}"',
        'items_file: cat.csv',
      ].join('\n'),
      'cat.csv': 'id,name,colour\nc1,chair,\nc2,table,\n',
    });
    expect(problems(dir)).toEqual(['m.yaml:3:20 defaults.prompt_template: no item has a value for {colour}']);
  });

  it('says a template that renders empty for an item, and a syntax error at the template', () => {
    const dir = fixture({
      'm.yaml': [
        'name: t',
        'items:',
        '  - { id: a, prompt_template: "{note}", variables: { note: "  " } }',
        '  - { id: b, prompt_template: "{note} }", variables: { note: x } }',
      ].join('\n'),
    });
    expect(problems(dir)).toEqual([
      'm.yaml:3:31 items[0].prompt_template: renders an empty prompt for item "a" (items[0])',
      'm.yaml:4:31 items[1].prompt_template: a lone "}" at character 8: write "}}" for a literal brace',
    ]);
  });

  it('still refuses a misspelt field column no template names, and needs a prompt without templates', () => {
    const dir = fixture({
      'm.yaml': 'name: t\nitems_file: cat.jsonl\n',
      'cat.jsonl':
        '{"id":"a","prompt":"x","colour":"red"}\n{"id":"b","colour":"blue"}\n{"id":"c","prompt":"y","sise":"1:1"}\n',
    });
    expect(problems(dir, 'm.yaml')).toEqual([
      'cat.jsonl:2:1 prompt: is required',
      'cat.jsonl:3:1 sise: unknown field (did you mean "size"?)',
    ]);
  });

  it('fills image_urls from the row, checks each file as it loads, and names the item that lacks one', () => {
    const dir = fixture({
      'm.yaml': [
        'name: t',
        'defaults:',
        '  prompt_template: "{name}, as in the photo"',
        '  image_urls: ["photos/{sku}.png"]',
        'items_file: cat.csv',
      ].join('\n'),
      'cat.csv': 'id,sku,name\na,S1,chair\nb,S2,table\n',
      'photos/S1.png': PNG,
    });
    expect(problems(dir)).toEqual([
      'cat.csv:3:1 defaults.image_urls[0] for item "b" (row 2): photos/S2.png: file not found',
    ]);
    writeFileSync(join(dir, 'photos/S2.png'), Buffer.concat([PNG, Buffer.from('other')]));
    const { items, references } = loadManifest(join(dir, 'm.yaml'));
    expect(references).toHaveLength(2);
    expect(items.map((item) => item.image_urls?.[0])).toEqual(references.map((reference) => reference.uri));
  });
});
