// Variants end to end (issue #40): the built CLI in a sandbox (embedded dev server and workers)
// against the real emulator over HTTP, whose ground truth counts every task and its prompt. A
// catalog of 8 products x 3 variants (one selected by `where`) runs once; then one variant's
// template is edited, `plan --json` says that exactly its outputs will be generated, and the run
// creates exactly those tasks, with the new prompts, carrying every other output over; `redo` of
// two outputs of one product keeps their ids, {variant} paths and report fields.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groundTruth, readReport } from '../bench/catalog-audit.js';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import type { ReportLine } from '../report/report-line.js';
import { cliSandbox, sha256File, type CliSandbox } from './support/cli.js';
import { startTestEmulator } from './support/emulator.js';

let sandbox: CliSandbox;
let emulator: RunningEmulator;
const out = (...parts: string[]): string => join(sandbox.dir, 'out', ...parts);

const PRODUCTS = [
  ['oak-chair', 'Oak chair', 'red', 'chair'],
  ['pine-chair', 'Pine chair', 'natural', 'chair'],
  ['ash-table', 'Ash table', 'white', 'table'],
  ['elm-table', 'Elm table', 'dark', 'table'],
  ['brass-lamp', 'Brass lamp', 'gold', 'lamp'],
  ['steel-lamp', 'Steel lamp', 'grey', 'lamp'],
  ['wool-rug', 'Wool rug', 'blue', 'rug'],
  ['jute-rug', 'Jute rug', 'sand', 'rug'],
] as const;
/** The outputs of the `room` variant: chairs and tables. */
const ROOM_OUTPUTS = ['oak-chair-room', 'pine-chair-room', 'ash-table-room', 'elm-table-room'];

function writeCatalog(roomTemplate: string): void {
  writeFileSync(
    join(sandbox.dir, 'products.csv'),
    ['id,name,colour,category', ...PRODUCTS.map((row) => row.join(','))].join('\n'),
  );
  writeFileSync(
    join(sandbox.dir, 'catalog.yaml'),
    [
      'name: variants',
      'output: { dir: ./out, path_template: "{variant}/{id}_{index}.{ext}" }',
      'limits: { requests_per_second: 200 }',
      'defaults: { prompt_template: "{name} in {colour}, {style}" }',
      'variants:',
      '  - { id: studio, variables: { style: studio light on white } }',
      `  - { id: room, prompt_template: "${roomTemplate}", size: "16:9", where: { category: [chair, table] } }`,
      '  - { id: detail, variables: { style: macro close-up } }',
      'items_file: products.csv',
    ].join('\n'),
  );
}

async function run(...args: string[]) {
  const result = await sandbox.run(['run', 'catalog.yaml', '--no-progress', ...args], { timeoutMs: 170_000 });
  expect(result.code, result.stderr).toBe(0);
  return result;
}

const byId = (report: ReportLine[]): Map<string, ReportLine> =>
  new Map(report.map((line) => [line.id, line]));

beforeAll(async () => {
  emulator = await startTestEmulator({
    time_scale: 0.01,
    rate_limits: { submit: { per_second: 1000, burst: 1000 }, query: { per_second: 1000, burst: 1000 } },
  });
  sandbox = await cliSandbox({ PIXELMILL_API_BASE_URL: emulator.url, PIXELMILL_API_KEY: DEMO_API_KEY });
  writeCatalog('{name} in a bright living room');
  await run();
}, 180_000);

afterAll(async () => {
  await sandbox?.stop();
  if (sandbox) rmSync(sandbox.dir, { recursive: true, force: true });
});

describe('a catalog with variants', () => {
  let first: Map<string, ReportLine>;

  it('generates every product x variant once, with the rendered prompts, paths and report fields', async () => {
    const report = readReport({ outputDir: out() });
    first = byId(report);
    expect(report.map((line) => line.id)).toEqual(
      PRODUCTS.flatMap(([id, , , category]) => [
        `${id}-studio`,
        ...(category === 'chair' || category === 'table' ? [`${id}-room`] : []),
        `${id}-detail`,
      ]),
    );
    expect(report.every((line) => line.status === 'completed')).toBe(true);
    expect(first.get('oak-chair-room')).toMatchObject({
      id: 'oak-chair-room',
      product: 'oak-chair',
      variant: 'room',
      variables: { name: 'Oak chair', colour: 'red', category: 'chair' },
    });
    expect(Object.keys(first.get('oak-chair-room')!).slice(0, 4)).toEqual([
      'id',
      'product',
      'variant',
      'variables',
    ]);
    expect(first.get('wool-rug-detail')!.variables).toEqual({
      name: 'Wool rug',
      colour: 'blue',
      category: 'rug',
    });
    for (const line of report) {
      expect(line.images[0]!.path).toBe(`${line.variant}/${line.id}_0.png`);
      expect(existsSync(out(line.images[0]!.path))).toBe(true);
    }
    const prompts = (await groundTruth(emulator)).map((task) => task.prompt).sort();
    expect(prompts).toHaveLength(report.length);
    expect(prompts).toContain('Oak chair in red, studio light on white');
    expect(prompts).toContain('Oak chair in a bright living room');
    expect(prompts).toContain('Wool rug in blue, macro close-up');
  });

  it('plans an edited variant: exactly its outputs to generate', async () => {
    writeCatalog('{name} in a bright living room at dusk');
    const planned = await sandbox.run(['plan', 'catalog.yaml', '--json']);
    expect(planned.code, planned.stderr).toBe(0);
    expect(JSON.parse(planned.stdout)).toMatchObject({
      items: first.size,
      products: PRODUCTS.length,
      variants: [
        { id: 'studio', outputs: 8, generate: 0 },
        { id: 'room', outputs: 4, generate: 4 },
        { id: 'detail', outputs: 8, generate: 0 },
      ],
      generate: 4,
      counts: { new: 0, changed: 4, unchanged: first.size - 4, removed: 0 },
    });
  });

  it('regenerates exactly that variant, with its new prompts, and carries the others over', async () => {
    const before = (await groundTruth(emulator)).length;
    await run();
    const tasks = await groundTruth(emulator);
    expect(
      tasks
        .slice(before)
        .map((task) => task.prompt)
        .sort(),
    ).toEqual(
      ['Ash table', 'Elm table', 'Oak chair', 'Pine chair'].map(
        (name) => `${name} in a bright living room at dusk`,
      ),
    );
    const report = readReport({ outputDir: out() });
    for (const line of report) {
      expect(line.status).toBe('completed');
      if (ROOM_OUTPUTS.includes(line.id)) {
        expect(line.reused_from, line.id).toBeUndefined();
        expect(line.images[0]!.sha256).not.toBe(first.get(line.id)!.images[0]!.sha256);
      } else {
        expect(line.reused_from, line.id).toMatch(/^pixelmill\/variants@/);
        expect(line.images).toEqual(first.get(line.id)!.images);
      }
      expect(sha256File(out(line.images[0]!.path))).toBe(line.images[0]!.sha256);
      expect(line.product).toBe(first.get(line.id)!.product);
    }
  });

  it('redoes chosen outputs of two variants of one product: same ids, paths and report fields', async () => {
    const before = (await groundTruth(emulator)).length;
    const redo = await sandbox.run(
      ['redo', 'catalog.yaml', '--ids', 'oak-chair-room,oak-chair-detail', '--no-progress'],
      { timeoutMs: 170_000 },
    );
    expect(redo.code, redo.stderr).toBe(0);
    const tasks = (await groundTruth(emulator)).slice(before);
    expect(tasks.map((task) => task.prompt).sort()).toEqual([
      'Oak chair in a bright living room at dusk',
      'Oak chair in red, macro close-up',
    ]);
    const report = byId(readReport({ outputDir: out() }));
    for (const id of ['oak-chair-room', 'oak-chair-detail']) {
      const line = report.get(id)!;
      expect(line).toMatchObject({ status: 'completed', product: 'oak-chair', variant: id.slice(10) });
      expect(line.images[0]!.path).toBe(`${line.variant}/${id}_0.png`);
      expect(sha256File(out(line.images[0]!.path))).toBe(line.images[0]!.sha256);
    }
  }, 180_000);
});
