// Manifest validation: every problem reported at once, each at its file:line:col.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadManifest } from '../manifest/load.js';
import { problemsOf } from './support/manifest-problems.js';

function fixture(files: Record<string, string | Buffer>): string {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-manifest-'));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

describe('loadManifest', () => {
  it.each([
    ['', { rateCaps: {} }],
    ['limits: { requests_per_second: auto }', { rateCaps: {} }],
    ['limits: { requests_per_second: 20 }', { requestsPerSecond: 20 }],
    ['limits: { requests_per_second: 20, submits_per_second: auto }', { rateCaps: { all: 20 } }],
    ['limits: { submits_per_second: 4, queries_per_second: 30 }', { rateCaps: { submit: 4, query: 30 } }],
  ])('rates: "%s" is %j', (limits, expected) => {
    const dir = fixture({ 'r.yaml': ['name: rates', limits, 'items:', '  - prompt: a chair'].join('\n') });
    const { settings } = loadManifest(join(dir, 'r.yaml'));
    expect(settings).toMatchObject(expected);
    // A number alone is a fixed rate, used as given: nothing discovered.
    if (!('rateCaps' in expected)) expect(settings.rateCaps).toBeUndefined();
  });

  it('normalizes a valid manifest: defaults, derived stable ids, settings', () => {
    const dir = fixture({
      'm.yaml': [
        'name: chairs',
        'defaults: { size: "16:9", resolution: 2K }',
        'limits: { requests_per_second: 20, budget_credits: 500 }',
        'output: { dir: ./images, path_template: "{name}/{id}-{index}.{ext}" }',
        'items:',
        '  - prompt: a red chair',
        '  - { id: blue, prompt: a blue chair, n: 2, resolution: 4K }',
        'items_file: more.jsonl',
      ].join('\n'),
      'more.jsonl': '{"prompt":"a green chair","size":"1:1"}\n\n{"id":"lamp","prompt":"a lamp"}\n',
    });
    const loaded = loadManifest(join(dir, 'm.yaml'));
    expect(loaded.items).toHaveLength(4);
    const [red, blue, green, lamp] = loaded.items;
    expect(red).toMatchObject({
      prompt: 'a red chair',
      size: '16:9',
      resolution: '2K',
      n: 1,
      model: 'gpt-image-2',
    });
    expect(red?.id).toMatch(/^item-[0-9a-f]{16}$/);
    expect(blue).toMatchObject({ id: 'blue', n: 2, resolution: '4K', size: '16:9' });
    expect(green).toMatchObject({ size: '1:1', resolution: '2K' });
    expect(lamp?.id).toBe('lamp');
    expect(loaded.settings).toMatchObject({
      name: 'chairs',
      requestsPerSecond: 20,
      budgetCredits: 500,
      outputDir: join(dir, 'images'),
      pathTemplate: '{name}/{id}-{index}.{ext}',
      apiKeyEnv: 'PIXELMILL_API_KEY',
    });
    expect(loaded.hash).toMatch(/^[0-9a-f]{64}$/);
    // Same input, same ids and hash: a rerun attaches to the same items.
    const again = loadManifest(join(dir, 'm.yaml'));
    expect(again.items.map((item) => item.id)).toEqual(loaded.items.map((item) => item.id));
    expect(again.hash).toBe(loaded.hash);
  });

  it('reports every problem at once with file:line:col and the field path', () => {
    const dir = fixture({
      'bad.yaml': [
        'name: "bad name!"', // 1
        'api:', // 2
        '  api_key: sk-live-oops', // 3
        'defaults:', // 4
        '  size: 16x9', // 5
        '  resolution: 8K', // 6
        'limits:', // 7
        '  requests_per_second: -1', // 8
        'output:', // 9
        '  dir: ./o', // 10
        '  path_template: "{id}/{foo}.png"', // 11
        'items:', // 12
        '  - prompt: ""', // 13
        '    n: 2.5', // 14
      ].join('\n'),
    });
    const problems = problemsOf(join(dir, 'bad.yaml'));
    const expectAt = (prefix: string, path: string) =>
      expect(
        problems.some((p) => p.startsWith(`${prefix} ${path}:`)),
        `${prefix} ${path} in\n${problems.join('\n')}`,
      ).toBe(true);
    const file = join(dir, 'bad.yaml').replace(`${process.cwd()}/`, '');
    expectAt(`${file}:1:7`, 'name');
    expectAt(`${file}:3:3`, 'api.api_key');
    expectAt(`${file}:5:9`, 'defaults.size');
    expectAt(`${file}:6:15`, 'defaults.resolution');
    expectAt(`${file}:8:24`, 'limits.requests_per_second');
    expectAt(`${file}:11:18`, 'output.path_template');
    expectAt(`${file}:13:13`, 'items[0].prompt');
    expectAt(`${file}:14:8`, 'items[0].n');
    expect(problems.join('\n')).toContain('unknown placeholder {foo}');
    // The message is about the field, never a dump of the key's value.
    expect(problems.join('\n')).not.toContain('sk-live-oops');
  });

  it('rejects duplicate ids, explicit and derived, naming the first occurrence', () => {
    const dir = fixture({
      'dup.yaml':
        'name: d\nitems:\n  - { id: a, prompt: x }\n  - { id: a, prompt: y }\n  - prompt: same\n  - prompt: same\n',
    });
    const problems = problemsOf(join(dir, 'dup.yaml'));
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/dup\.yaml:4:5 id: duplicate id "a" \(first at .*dup\.yaml:3:5\)/);
    expect(problems[1]).toMatch(/dup\.yaml:6:5 id: same prompt and parameters/);
  });

  it('reports YAML syntax errors with their position', () => {
    const dir = fixture({ 's.yaml': 'name: s\nitems:\n  - prompt: a\n    n: [1\n' });
    const problems = problemsOf(join(dir, 's.yaml'));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatch(/s\.yaml:\d+:\d+ /);
  });

  it('reports problems in CSV and JSONL items files by line', () => {
    const dir = fixture({
      'c.yaml': 'name: c\nitems_file: cat.csv\n',
      'cat.csv': 'id,prompt,size,n\nc1,a lamp,16:9,2\nc2,,1:1,x\nc3,ok,7x,1\n',
      'j.yaml': 'name: j\nitems_file: cat.jsonl\n',
      'cat.jsonl': '{"prompt":"ok"}\n{"prompt": "x", "n": }\n[1]\n{"prompt":"y","sise":"1:1"}\n',
    });
    const csv = problemsOf(join(dir, 'c.yaml')).join('\n');
    expect(csv).toMatch(/cat\.csv:3:1 prompt: is required/);
    expect(csv).toMatch(/cat\.csv:3:1 n: /);
    expect(csv).toMatch(/cat\.csv:4:1 size: must be an aspect ratio/);
    const jsonl = problemsOf(join(dir, 'j.yaml'));
    expect(jsonl[0]).toMatch(/cat\.jsonl:2:\d+ JSON syntax/);
    expect(jsonl[1]).toMatch(/cat\.jsonl:3:1 each line must be a JSON object/);
    expect(jsonl[2]).toMatch(/cat\.jsonl:4:1 sise: unknown field \(did you mean "size"\?\)/);
  });

  it('says a misspelt CSV header once, at its cell, and still every row with a problem of its own', () => {
    const rows = Array.from({ length: 1000 }, (_, i) => `r${i},a lamp,${i === 500 ? '7x' : '1:1'}`);
    const dir = fixture({
      'm.yaml': 'name: t\nitems_file: cat.csv\n',
      'cat.csv': ['id,promt,size', ...rows].join('\n'),
    });
    expect(problemsOf(join(dir, 'm.yaml')).map((p) => p.replace(/^.*cat\.csv/, 'cat.csv'))).toEqual([
      'cat.csv:1:4 promt: unknown column (did you mean "prompt"?)',
      'cat.csv:502:1 size: must be an aspect ratio like "16:9" (or "auto")',
    ]);
  });

  it('suggests the nearest known field for an unknown key at every level', () => {
    const dir = fixture({
      'k.yaml': [
        'name: k', // 1
        'limits: { requets_per_second: 3 }', // 2
        'retry: { max_attemps: 3 }', // 3
        'output: { dir: o, path_templte: "{id}_{index}.{ext}" }', // 4
        'colour: red', // 5
        'items:', // 6
        '  - promt: a lamp', // 7
        '  - { prompt: a chair, sise: "1:1", promt: b }', // 8
      ].join('\n'),
    });
    const problems = problemsOf(join(dir, 'k.yaml')).map((p) => p.replace(/^.*k\.yaml/, 'k.yaml'));
    expect(problems).toEqual([
      'k.yaml:2:11 limits.requets_per_second: unknown field (did you mean "requests_per_second"?)',
      'k.yaml:3:10 retry.max_attemps: unknown field (did you mean "max_attempts"?)',
      'k.yaml:4:19 output.path_templte: unknown field (did you mean "path_template"?)',
      'k.yaml:5:1 colour: unknown field',
      // The misspelling explains the missing prompt: "prompt: is required" is not said as well.
      'k.yaml:7:5 items[0].promt: unknown field (did you mean "prompt"?)',
      // No guess of a field the item already has.
      'k.yaml:8:24 items[1].sise: unknown field (did you mean "size"?)',
      'k.yaml:8:37 items[1].promt: unknown field',
    ]);
  });

  it('lists problems by file, line and column, the manifest first', () => {
    const dir = fixture({
      'o.yaml': 'name: o\nitems_file: cat.jsonl\noutput: /proc/x\n',
      'cat.jsonl': '{"prompt":"b","n":0}\n{"prompt":"a","sise":"1:1"}\n',
    });
    expect(problemsOf(join(dir, 'o.yaml')).map((p) => p.replace(/^.*\/(?=[a-z]+\.)/, ''))).toEqual([
      expect.stringMatching(/^o\.yaml:3:9 output: \/proc\/x is inside \/proc/),
      'cat.jsonl:1:1 n: must be at least 1',
      'cat.jsonl:2:1 sise: unknown field (did you mean "size"?)',
    ]);
  });

  it('points an unterminated quote at the line and column where it opens', () => {
    const dir = fixture({
      'y.yaml': 'name: t\nitems:\n  - id: b\n    prompt: "unterminated\n    size: 1:1\n',
      'q.yaml': 'name: t\nitems_file: q.csv\n',
      'q.csv': 'id,prompt\na,"hello\nb,world\n',
    });
    expect(problemsOf(join(dir, 'y.yaml'))).toEqual([
      expect.stringMatching(/y\.yaml:4:13 Missing closing "quote$/),
    ]);
    expect(problemsOf(join(dir, 'q.yaml'))).toEqual([
      expect.stringMatching(/q\.csv:2:3 CSV syntax: Quote Not Closed: the quoted cell opened here/),
    ]);
  });

  it('rejects missing files, non-UTF-8 text, and manifests without items', () => {
    const dir = fixture({
      'latin1.yaml': Buffer.concat([
        Buffer.from('name: x\nitems:\n  - prompt: caf'),
        Buffer.from([0xe9]),
        Buffer.from('\n'),
      ]),
      'empty.yaml': 'name: e\n',
      'missing.yaml': 'name: m\nitems_file: nowhere.csv\n',
    });
    expect(problemsOf(join(dir, 'latin1.yaml'))[0]).toMatch(/latin1\.yaml:3:16 the file is not valid UTF-8/);
    expect(problemsOf(join(dir, 'empty.yaml'))[0]).toMatch(
      /items: the manifest needs `items` or `items_file`/,
    );
    expect(problemsOf(join(dir, 'missing.yaml'))[0]).toMatch(/nowhere\.csv: file not found/);
    expect(problemsOf(join(dir, 'no-such-manifest.yaml'))[0]).toMatch(/file not found/);
  });
});
