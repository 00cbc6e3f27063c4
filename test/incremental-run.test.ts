// Incremental runs end to end (issue #16): the built CLI in a sandbox (embedded dev server and
// workers) against the real emulator over HTTP, whose ground truth counts every task. A 60-item
// catalog runs once; then 3 prompts edited, 2 items added and 1 removed give exactly 5 new tasks,
// `plan --json` says so beforehand, and the unchanged images stay byte for byte. A deleted image
// is fetched again from its result URL, a deleted index is rebuilt from the run state, a changed
// path template copies what is stored, and --prune deletes what no item uses.
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groundTruth, readReport, readSummary } from '../bench/catalog-audit.js';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import type { ReportLine } from '../report/report-line.js';
import { cliSandbox, sha256File, type CliSandbox } from './support/cli.js';
import { startTestEmulator } from './support/emulator.js';

const ITEMS = 60;
let sandbox: CliSandbox;
let emulator: RunningEmulator;
const out = (...parts: string[]): string => join(sandbox.dir, 'out', ...parts);
const tasks = async (): Promise<number> => (await groundTruth(emulator)).length;

interface Item {
  id: string;
  prompt: string;
  n?: number;
}

const firstCatalog: Item[] = Array.from({ length: ITEMS }, (_, i) => ({
  id: `p${i}`,
  prompt: `catalog product ${i}, studio light`,
  ...(i % 10 === 0 ? { n: 2 } : {}),
}));

/** Prompts 5, 6 and 7 edited, p60 and p61 added, p3 removed. */
const editedCatalog: Item[] = [
  ...firstCatalog
    .filter((item) => item.id !== 'p3')
    .map((item) =>
      ['p5', 'p6', 'p7'].includes(item.id) ? { ...item, prompt: `${item.prompt}, on oak` } : item,
    ),
  { id: 'p60', prompt: 'catalog product 60, studio light' },
  { id: 'p61', prompt: 'catalog product 61, studio light' },
];

function writeCatalog(items: readonly Item[], pathTemplate?: string, name = 'incremental'): void {
  writeFileSync(
    join(sandbox.dir, 'catalog.yaml'),
    [
      `name: ${name}`,
      pathTemplate ? `output: { dir: ./out, path_template: "${pathTemplate}" }` : 'output: ./out',
      'limits: { requests_per_second: 200 }',
      'items:',
      ...items.map(
        (item) => `  - { id: ${item.id}, prompt: "${item.prompt}"${item.n ? `, n: ${item.n}` : ''} }`,
      ),
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
  writeCatalog(firstCatalog);
  await run();
}, 180_000);

afterAll(async () => {
  await sandbox?.stop();
  if (sandbox) rmSync(sandbox.dir, { recursive: true, force: true });
});

describe('an edited catalog', () => {
  let before: Map<string, ReportLine>;
  let tasksBefore: number;

  it('is planned before anything is spent: 5 to generate, 56 unchanged, 1 removed', async () => {
    before = byId(readReport({ outputDir: out() }));
    expect(before.size).toBe(ITEMS);
    tasksBefore = await tasks();
    expect(tasksBefore).toBe(ITEMS);
    writeCatalog(editedCatalog);
    const planned = await sandbox.run(['plan', 'catalog.yaml', '--json']);
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout) as Record<string, unknown>;
    expect(plan).toMatchObject({
      catalog: 'incremental',
      items: 61,
      generate: 5,
      counts: {
        new: 2,
        changed: 3,
        unchanged: 56,
        moved: 0,
        restore: 0,
        regenerate: 0,
        removed: 1,
        unused: 1,
      },
      removed_ids: ['p3'],
      credits: { total: 5, by_resolution: { '1K': 5 } },
      images: 5,
      estimate: { rate_source: 'fixed', submits_per_second: 200 },
    });
    expect(await tasks()).toBe(tasksBefore);
    const dry = await run('--dry-run');
    expect(dry.stdout).toContain('5 items to generate (2 new, 3 changed, 0 gone for good), 56 unchanged');
  });

  it('generates exactly its new and changed items and carries the others over byte for byte', async () => {
    const second = await run();
    expect(second.stderr).toContain('pixelmill: plan: 5 items to generate');
    expect((await tasks()) - tasksBefore).toBe(5);
    const report = readReport({ outputDir: out() });
    expect(report.map((line) => line.id)).toEqual(editedCatalog.map((item) => item.id));
    expect(report.every((line) => line.status === 'completed')).toBe(true);
    const generated = new Set(['p5', 'p6', 'p7', 'p60', 'p61']);
    for (const line of report) {
      if (generated.has(line.id)) {
        expect(line.reused_from, line.id).toBeUndefined();
        expect(line.attempts).toBe(1);
        continue;
      }
      const earlier = before.get(line.id)!;
      expect(line.reused_from, line.id).toMatch(/^pixelmill\/incremental@/);
      expect(line.credits_cost).toBe(0);
      expect(line.images).toEqual(earlier.images);
      for (const image of line.images) expect(sha256File(out(image.path))).toBe(image.sha256);
    }
    const summary = readSummary({ outputDir: out() }) as unknown as Record<string, unknown>;
    expect(summary.catalog).toMatchObject({
      generated: 5,
      reused: 56,
      removed: 1,
      removed_ids: ['p3'],
      pruned: false,
    });
    expect(summary.credits_charged).toBe(5);
    // The removed item's image stays until --prune.
    expect(existsSync(out(before.get('p3')!.images[0]!.path))).toBe(true);
  }, 180_000);

  it('fetches a deleted image again from its result URL, without a task', async () => {
    const line = byId(readReport({ outputDir: out() })).get('p10')!;
    rmSync(out(line.images[1]!.path));
    const planned = JSON.parse((await sandbox.run(['plan', 'catalog.yaml', '--json'])).stdout) as {
      counts: Record<string, number>;
    };
    expect(planned.counts).toMatchObject({ restore: 1, unchanged: 60, new: 0, changed: 0 });
    const count = await tasks();
    await run();
    expect(await tasks()).toBe(count);
    expect(sha256File(out(line.images[1]!.path))).toBe(line.images[1]!.sha256);
    const summary = readSummary({ outputDir: out() }) as unknown as Record<string, unknown>;
    expect(summary.catalog).toMatchObject({ generated: 0, reused: 61, restored: 1 });
  }, 180_000);

  it("rebuilds a deleted catalog index from the plans and outcomes of the catalog's runs", async () => {
    rmSync(out('.pixelmill', 'catalog.jsonl'));
    const planned = JSON.parse((await sandbox.run(['plan', 'catalog.yaml', '--json'])).stdout) as {
      counts: Record<string, number>;
      note?: string;
    };
    expect(planned.counts).toMatchObject({ unchanged: 61, new: 0, changed: 0, restore: 0 });
    expect(planned.note).toMatch(/no catalog index: rebuilt from the plans and outcomes of \d+ runs?/);
  });

  it('copies stored images where a new path template puts them, and --prune deletes what no item uses', async () => {
    const removed = out(before.get('p3')!.images[0]!.path);
    const count = await tasks();
    writeCatalog(editedCatalog, 'by-size/{size}/{id}_{index}.{ext}');
    await run('--prune');
    expect(await tasks()).toBe(count);
    const report = readReport({ outputDir: out() });
    for (const line of report) {
      for (const image of line.images) {
        expect(image.path).toMatch(/^by-size\/1x1\//);
        expect(sha256File(out(image.path))).toBe(image.sha256);
      }
    }
    expect(existsSync(removed)).toBe(false);
    const summary = readSummary({ outputDir: out() }) as unknown as Record<string, unknown>;
    expect(summary.catalog).toMatchObject({ generated: 0, reused: 61, moved: 61, pruned: true });
    // The files at the old paths are results no item uses now: pruned with the rest.
    const oldPath = out(before.get('p0')!.images[0]!.path);
    expect(existsSync(oldPath) ? statSync(oldPath).size : 0).toBe(0);
  }, 180_000);

  it('is a new catalog under another name, and plan says so', async () => {
    writeCatalog(editedCatalog, undefined, 'renamed');
    const planned = JSON.parse((await sandbox.run(['plan', 'catalog.yaml', '--json'])).stdout) as {
      counts: Record<string, number>;
      basis: unknown;
      note?: string;
    };
    expect(planned.basis).toBeNull();
    expect(planned.counts).toMatchObject({ new: 61, unchanged: 0 });
    expect(planned.note).toContain('the output holds catalog "incremental", not "renamed"');
  });
});
