// Variants (issue #40): every item (or those a variant's `where` selects) times every variant, one
// output each with the id `<item>-<variant>`, parameters from the item over the variant over
// `defaults`, and the variant's problems (duplicate or bad ids, ids colliding, an unknown column
// in `where`) at their place.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generationKey } from '../catalog/generation-key.js';
import { loadManifest } from '../manifest/load.js';
import { renderResultPath } from '../manifest/result-paths.js';
import { problemsOf } from './support/manifest-problems.js';

function fixture(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-variants-'));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

const problems = (dir: string): string[] =>
  problemsOf(join(dir, 'm.yaml')).map((line) => line.replaceAll(`${dir}/`, ''));

const CATALOG = [
  'id,name,colour,category,size',
  'oak-chair,Oak chair,red,chair,',
  'pine-table,Pine table,natural,table,4:3',
  'brass-lamp,Brass lamp,gold,lamp,',
].join('\n');

const MANIFEST = [
  'name: variants', // 1
  'output: { dir: ./out, path_template: "{variant}/{id}_{index}.{ext}" }', // 2
  'defaults: { size: "1:1", prompt_template: "{name} in {colour}, {style}" }', // 3
  'variants:', // 4
  '  - { id: studio, variables: { style: "studio light on white" } }', // 5
  '  - id: room', // 6
  '    prompt_template: "{name} in a {room}, {variant} shot"', // 7
  '    size: "16:9"', // 8
  '    n: 2', // 9
  '    variables: { room: living room }', // 10
  '    where: { category: [chair, table] }', // 11
  '  - { id: detail, where: { category: lamp }, variables: { style: macro }, params: { seed: 7 } }', // 12
  'items_file: cat.csv', // 13
].join('\n');

describe('variants', () => {
  it('makes one output per item and variant it selects, in manifest order', () => {
    const dir = fixture({ 'm.yaml': MANIFEST, 'cat.csv': CATALOG });
    const { items, expansion } = loadManifest(join(dir, 'm.yaml'));
    expect(expansion).toEqual({
      products: 3,
      variants: [
        { id: 'studio', outputs: 3 },
        { id: 'room', outputs: 2 },
        { id: 'detail', outputs: 1 },
      ],
    });
    expect(
      items.map((item) => [item.id, item.product, item.variant, item.prompt, item.size, item.n]),
    ).toEqual([
      ['oak-chair-studio', 'oak-chair', 'studio', 'Oak chair in red, studio light on white', '1:1', 1],
      ['oak-chair-room', 'oak-chair', 'room', 'Oak chair in a living room, room shot', '16:9', 2],
      // The item's own size wins over its variant's and the defaults'.
      ['pine-table-studio', 'pine-table', 'studio', 'Pine table in natural, studio light on white', '4:3', 1],
      ['pine-table-room', 'pine-table', 'room', 'Pine table in a living room, room shot', '4:3', 2],
      ['brass-lamp-studio', 'brass-lamp', 'studio', 'Brass lamp in gold, studio light on white', '1:1', 1],
      ['brass-lamp-detail', 'brass-lamp', 'detail', 'Brass lamp in gold, macro', '1:1', 1],
    ]);
    // The row's own columns, one object for every variant of the item.
    expect(items[1]!.variables).toEqual({ name: 'Oak chair', colour: 'red', category: 'chair' });
    expect(items[1]!.variables).toBe(items[0]!.variables);
    expect(items[5]!.params).toEqual({ seed: 7 });
    expect(
      renderResultPath('{variant}/{id}_{index}.{ext}', { name: 'v', item: items[1]!, index: 1, ext: 'png' }),
    ).toBe('room/oak-chair-room_1.png');
    // The variant's id and variables say where an output came from, not what it asks for.
    const { product: _p, variant: _v, variables: _vars, ...bare } = items[0]!;
    expect(generationKey(items[0]!)).toBe(generationKey(bare));
  });

  it('edits one variant: only its outputs change their generation key', () => {
    const dir = fixture({ 'm.yaml': MANIFEST, 'cat.csv': CATALOG });
    const before = loadManifest(join(dir, 'm.yaml')).items.map(generationKey);
    writeFileSync(join(dir, 'm.yaml'), MANIFEST.replace('{variant} shot', '{variant} shot at dusk'));
    const edited = loadManifest(join(dir, 'm.yaml')).items;
    const changed = edited.filter((item, k) => generationKey(item) !== before[k]).map((item) => item.id);
    expect(changed).toEqual(['oak-chair-room', 'pine-table-room']);
  });

  it('derives a product id from the row when it has none, the same on every load', () => {
    const dir = fixture({
      'm.yaml':
        'name: d\nvariants: [{ id: a }, { id: b }]\ndefaults: { prompt_template: "{name}" }\nitems_file: c.csv\n',
      'c.csv': 'name\nchair\ntable\n',
    });
    const ids = loadManifest(join(dir, 'm.yaml')).items.map((item) => item.id);
    expect(ids).toHaveLength(4);
    expect(ids[0]).toMatch(/^item-[0-9a-f]{16}-a$/);
    expect(ids[1]).toBe(ids[0]!.replace(/-a$/, '-b'));
    expect(loadManifest(join(dir, 'm.yaml')).items.map((item) => item.id)).toEqual(ids);
  });

  it('says duplicate and bad variant ids, an unknown `where` column and {variant} without variants', () => {
    const dir = fixture({
      'm.yaml': [
        'name: v',
        'variants:',
        '  - { id: studio }',
        '  - { id: studio }',
        '  - { id: "-bad" }',
        '  - { id: ok, where: { catgory: chair } }',
        'items: [{ id: a, prompt: x, variables: { category: chair } }]',
      ].join('\n'),
    });
    expect(problems(dir)).toEqual([
      'm.yaml:4:11 variants[1].id: duplicate variant id "studio" (first at variants[0])',
      'm.yaml:5:11 variants[2].id: must be 1-64 characters of letters, digits, ".", "_" or "-", starting with a letter or digit',
    ]);
    writeFileSync(
      join(dir, 'm.yaml'),
      (MANIFEST.split('\n').slice(0, 3).join('\n') + '\nitems_file: cat.csv').replace(
        'defaults: { size: "1:1", prompt_template: "{name} in {colour}, {style}" }',
        'defaults: { size: "1:1" }',
      ),
    );
    writeFileSync(join(dir, 'cat.csv'), 'id,prompt\na,x\n');
    expect(problems(dir)).toEqual([
      'm.yaml:2:38 output.path_template: {variant} needs `variants`: without them no item has a variant',
    ]);
    writeFileSync(
      join(dir, 'm.yaml'),
      'name: v\nvariants:\n  - { id: ok, where: { catgory: chair } }\nitems: [{ id: a, prompt: x, variables: { category: chair } }]\n',
    );
    expect(problems(dir)).toEqual([
      'm.yaml:3:24 variants[0].where.catgory: unknown column (did you mean "category"?): no item field or column has this name',
    ]);
  });

  it('says an output id that collides with another item and variant, at the second', () => {
    const dir = fixture({
      'm.yaml': [
        'name: v',
        'variants: [{ id: b }, { id: b-c }, { id: c }]',
        'items:',
        '  - { id: a, prompt: one }',
        '  - { id: a-b, prompt: two }',
        '  - { id: a, prompt: three }',
      ].join('\n'),
    });
    expect(problems(dir)).toEqual([
      'm.yaml:5:5 id: "a-b-c" of item "a-b" and variant "c" is also the id of item "a" and variant "b-c" (at m.yaml:4:5): rename an item or a variant',
      'm.yaml:6:5 id: duplicate id "a" (first at m.yaml:4:5)',
    ]);
  });

  it('takes a product twice when its rows are selected by different variants (as retry-failed writes them)', () => {
    const dir = fixture({
      'm.yaml': [
        'name: v',
        'output: { dir: ./out, path_template: "{variant}/{id}_{index}.{ext}" }',
        'variants: [{ id: studio, where: { for: studio } }, { id: room, where: { for: room } }]',
        'items:',
        '  - { id: a, prompt: a in the studio, variables: { for: studio } }',
        '  - { id: a, prompt: a in a room, size: "16:9", variables: { for: room } }',
      ].join('\n'),
    });
    const { items, expansion } = loadManifest(join(dir, 'm.yaml'));
    expect(items.map((item) => [item.id, item.product, item.variant, item.prompt, item.size])).toEqual([
      ['a-studio', 'a', 'studio', 'a in the studio', '1:1'],
      ['a-room', 'a', 'room', 'a in a room', '16:9'],
    ]);
    expect(expansion?.products).toBe(1);
  });

  it('says a variable one variant lacks once, at the template, naming the variant', () => {
    const dir = fixture({
      'm.yaml': [
        'name: v',
        'defaults: { prompt_template: "{name}, {style}" }',
        'variants: [{ id: studio, variables: { style: studio } }, { id: plain }]',
        'items_file: cat.csv',
      ].join('\n'),
      'cat.csv': 'id,name\na,chair\nb,table\n',
    });
    expect(problems(dir)).toEqual([
      'm.yaml:2:30 defaults.prompt_template: no item of variant "plain" has a value for {style}',
    ]);
  });
});
