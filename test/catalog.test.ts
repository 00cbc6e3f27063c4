// The catalog's pure parts (issue #16): generation keys, the comparison of a manifest with the
// output's index, the index a run leaves behind (with --prune), and the plan's estimate.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { diffCatalog, RESTORE_MARGIN_MS } from '../catalog/diff.js';
import { estimatePlan } from '../catalog/estimate.js';
import { generationKey } from '../catalog/generation-key.js';
import {
  catalogHeader,
  catalogIndexLines,
  parseCatalogIndex,
  readCatalogIndex,
  type CatalogEntry,
} from '../catalog/index-file.js';
import { updatedIndex } from '../catalog/update-index.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { CATALOG_INDEX_FILE, LocalRunStateStore, type OutcomeLine } from '../runstate/index.js';

const NOW = Date.UTC(2026, 10, 24, 12);
const RUN1 = 'pixelmill/chairs@run-1';
const RUN2 = 'pixelmill/chairs@run-2';

const item = (id: string, prompt: string, more: Partial<PlannedItem> = {}): PlannedItem => ({
  id,
  prompt,
  model: 'm',
  size: '1:1',
  resolution: '1K',
  n: 1,
  ...more,
});

const entry = (of: PlannedItem, more: Partial<CatalogEntry> = {}): CatalogEntry => ({
  key: generationKey(of),
  id: of.id,
  images: [
    { path: `${of.id}_0.png`, sha256: `sha-${of.id}`, bytes: 100, source_url: `http://r/${of.id}/0.png` },
  ],
  task_id: `task-${of.id}`,
  attempts: 1,
  credits_cost: 1,
  made_by: RUN1,
  used_by: RUN1,
  ...more,
});

const header = catalogHeader({
  catalog: 'chairs',
  run: RUN1,
  manifest_hash: 'h1',
  items: 5,
  finished_at: '2026-11-24T11:00:00Z',
});

describe('generation keys', () => {
  it('depend on what is asked for, not on the id, the position or what an incremental plan adds', () => {
    const a = item('a', 'oak chair');
    // The keys stored catalogs hold: a change of the canonical form would regenerate everything.
    expect(generationKey(item('a', 'oak chair'))).toBe(
      'g1-03db139269830b1bfe02f411e2c221490b43351b9d599b6df6981fe3fcaf4823',
    );
    const full = item('p1-room', 'oak "chair" \u00e9\u672c', {
      size: '16:9',
      resolution: '2K',
      n: 3,
      model: 'gpt-image-2',
      image_urls: ['photos/a.png', 'http://x/1.png'],
      language: 'ja',
      params: { seed: 7, nested: { b: [1, 'x'], a: null } },
      product: 'p1',
      variant: 'room',
      variables: { colour: 'red' },
      position: 4,
    });
    expect(generationKey(full)).toBe('g1-a1e2ec04a07ed7e39a6ad3ab16dc6794ce61bd4dfb8c8da5553a71eccadd600d');
    const later = {
      ...item('z', 'p', { n: 2, size: 'auto', resolution: '4K', language: undefined }),
      future_field: 'x',
    };
    expect(generationKey(later)).toBe('g1-f006b3127bb495c1180aace2ee4d78d4fa155c9b1c64a33bda6d9977c032d3b3');
    expect(generationKey(item('renamed', 'oak chair'))).toBe(generationKey(a));
    expect(generationKey({ ...a, position: 4 })).toBe(generationKey(a));
    expect(generationKey(item('a', 'oak chair', { size: '16:9' }))).not.toBe(generationKey(a));
    expect(generationKey(item('a', 'oak chair', { image_urls: ['http://x/1.png'] }))).not.toBe(
      generationKey(a),
    );
    expect(generationKey(item('a', 'oak chair, on grass'))).not.toBe(generationKey(a));
    // The order fields come in does not matter.
    const reversed = Object.fromEntries(Object.entries(a).reverse()) as unknown as PlannedItem;
    expect(generationKey(reversed)).toBe(generationKey(a));
  });
});

describe('comparing a manifest with the catalog', () => {
  const old = {
    a: item('a', 'oak chair'),
    b: item('b', 'pine chair'),
    c: item('c', 'teak chair'),
    d: item('d', 'ash chair'),
    f: item('f', 'elm chair'),
    g: item('g', 'fir chair'),
  };
  const index = {
    header,
    entries: [
      entry(old.a),
      entry(old.b),
      entry(old.c),
      entry(old.d),
      entry(old.f, { expires_at: NOW + RESTORE_MARGIN_MS + 60_000 }),
      entry(old.g, { expires_at: NOW + 60_000 }),
    ],
  };
  const stored = new Map([
    ['a_0.png', 100],
    ['b_0.png', 100],
    ['c_0.png', 100],
    ['d_0.png', 100],
    ['g_0.png', 99], // altered by hand
  ]);
  const manifest = [
    old.a,
    item('b', 'pine chair, on grass'), // changed
    item('c2', 'teak chair'), // renamed
    item('e', 'birch chair'), // new
    old.f, // its file is gone; its URL still serves it
    old.g, // altered, and its URL expires within the margin
  ];
  const diff = diffCatalog({
    items: manifest,
    index,
    storedBytes: (path) => stored.get(path),
    pathsOf: (it) => [`${it.id}_0.png`],
    now: NOW,
  });

  it('counts each kind of item and the results no item uses', () => {
    expect(diff.counts).toEqual({
      new: 1,
      changed: 1,
      unchanged: 2,
      moved: 1,
      restore: 1,
      regenerate: 1,
      removed: 1,
      unused: 1,
    });
    expect(diff.removed.map((removed) => removed.id)).toEqual(['d']);
    expect(diff.basis).toEqual(header);
  });

  it('generates the new, changed and lost items and carries the rest, each with its manifest position', () => {
    expect(diff.generate.map((it) => [it.id, it.position])).toEqual([
      ['b', 1],
      ['e', 3],
      ['g', 5],
    ]);
    expect(diff.carried.map((it) => [it.id, it.position, it.reuse?.task_id])).toEqual([
      ['a', 0, 'task-a'],
      ['c2', 2, 'task-c'],
      ['f', 4, 'task-f'],
    ]);
    expect(diff.carried[1]!.reuse).toMatchObject({ from: RUN1, images: index.entries[2]!.images });
  });

  it('makes everything new without an index', () => {
    const fresh = diffCatalog({
      items: manifest,
      index: undefined,
      storedBytes: () => undefined,
      pathsOf: () => [],
      now: NOW,
    });
    expect(fresh.counts).toMatchObject({ new: 6, unchanged: 0, removed: 0 });
    expect(fresh.carried).toEqual([]);
    expect(fresh.basis).toBeUndefined();
  });

  it('reads back what it writes, skipping a damaged line and refusing a foreign header', () => {
    const text = [...catalogIndexLines(index)].join('');
    expect(parseCatalogIndex(text)).toEqual(index);
    const damaged = text.replace(/\n\{"key[^\n]*"id":"b"[^\n]*\n/, '\n{"key": 1}\n');
    expect(parseCatalogIndex(damaged)!.entries.map((e) => e.id)).toEqual(['a', 'c', 'd', 'f', 'g']);
    expect(parseCatalogIndex('{"not":"a header"}\n')).toBeUndefined();
  });

  it('reads a file line by line as it reads the text, across chunks and characters cut by them', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'pixelmill-index-'));
    onTestFinished(() => rmSync(stateDir, { recursive: true, force: true }));
    const store = new LocalRunStateStore();
    expect(await store.readCatalogIndexLines({ stateDir })).toBeUndefined();
    // 2,000 entries mostly of 3-byte characters: about 1 MB, so the reader's 64 KB chunks end inside
    // lines and inside characters; a blank line and a torn last line are skipped as in the text.
    const many = Array.from({ length: 2000 }, (_, k) => {
      const of = item(`p${k}`, `chair ${k}`);
      return entry(of, { id: `${'本'.repeat(100 + (k % 7))}-${k}`, made_by: `${'€'.repeat(k % 3)}run` });
    });
    const big = { header, entries: many };
    const text = `${[...catalogIndexLines(big)].join('')}\n{"key":"g1-torn","id":"`;
    writeFileSync(join(stateDir, CATALOG_INDEX_FILE), text);
    const lines = await store.readCatalogIndexLines({ stateDir });
    const read = await readCatalogIndex(lines!);
    expect(read).toEqual(big);
    expect(read).toEqual(parseCatalogIndex(text));
    writeFileSync(join(stateDir, CATALOG_INDEX_FILE), `{"not":"a header"}\n${text}`);
    expect(await readCatalogIndex((await store.readCatalogIndexLines({ stateDir }))!)).toBeUndefined();
  });
});

describe('the index a run leaves', () => {
  const a = item('a', 'oak chair');
  const b = item('b', 'pine chair');
  const c = item('c', 'teak chair');
  const previous = { header, entries: [entry(a), entry(b), entry(c)] };
  const completed = (of: PlannedItem, index: number, more: Partial<OutcomeLine> = {}): OutcomeLine => ({
    index,
    id: of.id,
    status: 'completed',
    task_id: `task-${of.id}-2`,
    attempts: 1,
    credits_cost: 2,
    images: [
      { path: `${of.id}_0.png`, sha256: `new-${of.id}`, bytes: 120, source_url: `http://r/${of.id}/2.png` },
    ],
    error: null,
    ...more,
  });
  // a carried over to a new path, b changed (its new image at its old path), c removed.
  const bChanged = item('b', 'pine chair, on grass');
  const items = [
    { ...a, reuse: { from: RUN1, task_id: 'task-a', attempts: 1, credits_cost: 1, images: entry(a).images } },
    bChanged,
  ];
  const outcomes = [
    completed(a, 0, {
      reused_from: RUN1,
      attempts: 0,
      credits_cost: 0,
      images: [{ ...entry(a).images[0]!, path: 'new/a_0.png' }],
    }),
    completed(bChanged, 1),
  ];
  const update = (prune: boolean) =>
    updatedIndex({
      previous,
      header: { catalog: 'chairs', run: RUN2, manifest_hash: 'h2', finished_at: 'now' },
      items,
      outcomes,
      prune,
    });

  it('keeps where a carried result came from, replaces what a current item overwrote, keeps the removed', () => {
    const { index, removed, toDelete } = update(false);
    expect(index.header).toMatchObject({ run: RUN2, items: 2, format: 1 });
    const byId = new Map(index.entries.map((e) => [e.id, e]));
    expect(byId.get('a')).toMatchObject({ made_by: RUN1, used_by: RUN2, task_id: 'task-a', credits_cost: 1 });
    expect(byId.get('a')!.images[0]!.path).toBe('new/a_0.png');
    expect(byId.get('b')).toMatchObject({ key: generationKey(bChanged), made_by: RUN2, credits_cost: 2 });
    // b's old result was overwritten at its path; c stays for a later manifest that has it again.
    expect(index.entries.map((e) => e.id).sort()).toEqual(['a', 'b', 'c']);
    expect(removed.map((e) => e.id)).toEqual(['c']);
    expect(toDelete).toEqual([]);
  });

  it('with --prune drops and deletes what no item uses, and the old copy of a moved result', () => {
    const { index, toDelete } = update(true);
    expect(index.entries.map((e) => e.id).sort()).toEqual(['a', 'b']);
    expect(toDelete.sort()).toEqual(['a_0.png', 'c_0.png']);
  });
});

describe("the plan's estimate", () => {
  const generate = [item('a', 'x'), item('b', 'y', { n: 2, resolution: '2K' })];
  const prices = { '1K': 1, '2K': 2, '4K': 4 };

  it('prices by resolution, and counts every call against a fixed rate', () => {
    const estimate = estimatePlan(generate, { requestsPerSecond: 5 }, prices, undefined);
    expect(estimate).toMatchObject({ credits: 5, creditsByResolution: { '1K': 1, '2K': 4 }, images: 3 });
    expect(estimate.rateSource).toBe('fixed');
    // 2 submits and 3 GETs at 5/s, then the slowest typical generation (2K).
    expect(estimate.seconds).toBe(1 + 80);
  });

  it("takes a discovered rate from the last run, under the manifest's caps, and its generation time", () => {
    const basis = { ...header, submit_rate: 40, generation_ms: 12_000 };
    const estimate = estimatePlan(
      generate,
      { requestsPerSecond: 0, rateCaps: { submit: 20 } },
      prices,
      basis,
    );
    expect(estimate).toMatchObject({ submitsPerSecond: 20, rateSource: 'last run', generationSeconds: 12 });
    expect(estimate.seconds).toBe(2 / 20 + 12);
    const unknown = estimatePlan(generate, { requestsPerSecond: 0, rateCaps: {} }, prices, undefined);
    expect(unknown).toMatchObject({ rateSource: 'unknown', seconds: undefined });
    expect(estimatePlan([], { requestsPerSecond: 5 }, prices, undefined).seconds).toBe(0);
  });
});
