// The gallery by product (issue #40) in a real headless Chromium, from file://: one row per
// product, one column per variant in the manifest's order (a pair `where:` left out is an empty
// cell), the status and checks filters on cells and rows, the search over ids and catalog
// columns, picks of a cell, a row and a column writing the redo command, the viewer, hostile
// catalog text kept inert, 10,000 products x 3 variants drawn a few rows at a time, and the page
// writeReport makes from a manifest with variants and an items file.
// PIXELMILL_DOCS_SCREENSHOT=1 also copies the demo screenshot to docs/gallery-products.png.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PNG } from 'pngjs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ItemStatus } from '../common/types.js';
import { renderResultPng } from '../emulator/apimart/images/render.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { GALLERY_FILE, writeGallery, type GalleryEntry, type GallerySummary } from '../report/gallery.js';
import type { ReportLine } from '../report/report-line.js';
import { writeManifest } from './activities-fixture.js';
import { launchChromium } from './support/browser.js';
import { openGallery, reportWithOneFailure, summaryOf } from './support/gallery.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

/** A report line with the fields issue #40 adds (report/report-line.ts may not have them yet). */
type VariantLine = ReportLine & { product?: string; variant?: string; variables?: Record<string, string> };

const DOCS_SCREENSHOT = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'gallery-products.png');

const HOSTILE = `</script><img src=x onerror="window.__pwned = 1">" onmouseover="window.__pwned = 2"`;

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  removeTempDirs();
});

interface Output {
  product: string;
  variant: string;
  status: ItemStatus;
  n?: number;
  checks?: boolean;
}

const PRODUCTS: Record<string, Record<string, string>> = {
  'lamp-01': { name: 'Paper floor lamp', colour: 'white', category: 'lamp' },
  'sofa-02': { name: 'Linen sofa', colour: 'sage green', category: 'sofa' },
  'chair-03': { name: 'Oak chair', colour: 'natural oak', category: 'chair' },
  'rug-04': { name: HOSTILE, colour: 'rust', category: 'rug' },
};

/**
 * Item-major, as a manifest expands them; the lamp has no lifestyle shot (a `where:` left it out),
 * so the first product alone would put the columns in the wrong order.
 */
const OUTPUTS: Output[] = [
  { product: 'lamp-01', variant: 'studio', status: 'completed' },
  { product: 'lamp-01', variant: 'detail', status: 'failed' },
  { product: 'sofa-02', variant: 'studio', status: 'completed', n: 2 },
  { product: 'sofa-02', variant: 'lifestyle', status: 'completed', checks: true },
  { product: 'sofa-02', variant: 'detail', status: 'completed' },
  { product: 'chair-03', variant: 'studio', status: 'completed' },
  { product: 'chair-03', variant: 'lifestyle', status: 'failed' },
  { product: 'chair-03', variant: 'detail', status: 'completed' },
  { product: 'rug-04', variant: 'studio', status: 'completed' },
  { product: 'rug-04', variant: 'lifestyle', status: 'completed' },
  { product: 'rug-04', variant: 'detail', status: 'completed' },
];

function productRun(dir: string, outputs: Output[]): { summary: GallerySummary; entries: GalleryEntry[] } {
  const counts: Record<ItemStatus, number> = {
    completed: 0,
    failed: 0,
    cancelled: 0,
    expired: 0,
    skipped: 0,
  };
  const entries = outputs.map(({ product, variant, status, n = 1, checks }, position): GalleryEntry => {
    const id = `${product}-${variant}`;
    const variables = PRODUCTS[product]!;
    const item: PlannedItem = {
      id,
      prompt: `${variables.name}, ${variables.colour}, ${variant} shot`,
      model: 'nano-banana-pro',
      size: '4:5',
      resolution: '1K',
      n,
    };
    const images =
      status !== 'completed'
        ? []
        : Array.from({ length: n }, (_, index) => {
            const path = `images/${id}_${index}.png`;
            const png = renderResultPng({ prompt: item.prompt, index, size: item.size, resolution: '1K' });
            mkdirSync(dirname(join(dir, path)), { recursive: true });
            writeFileSync(join(dir, path), png);
            return {
              path,
              sha256: '00'.repeat(32),
              bytes: png.length,
              source_url: `http://results.test/${position}/${index}.png`,
              ...(checks
                ? { checks: [{ check: 'blank', level: 'warn' as const, message: 'mostly one colour' }] }
                : {}),
            };
          });
    counts[status] += 1;
    const line: VariantLine = {
      id,
      product,
      variant,
      variables,
      status,
      task_id: `task_${position}`,
      attempts: 1,
      credits_cost: status === 'completed' ? n : 0,
      images,
      error:
        status === 'failed'
          ? { type: 'generation_error', code: 'content_policy', message: `refused: ${variables.name}` }
          : null,
    };
    return { line, item };
  });
  const summary = summaryOf('furniture-variants', entries, counts, [
    '2026-11-26T10:00:00.000Z',
    '2026-11-26T10:12:00.000Z',
  ]);
  return { summary, entries };
}

/** Each drawn row as [product, ...one word per variant cell: its status, "dim status" or "none"]. */
async function grid(page: Page): Promise<string[][]> {
  return page.evaluate(`Array.from(document.querySelectorAll('#rows .row'))
    .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
    .map((row) => [row.dataset.product, ...Array.from(row.querySelectorAll('.cell')).map((cell) =>
      cell.classList.contains('none') ? 'none' : (cell.classList.contains('dim') ? 'dim ' : '') + cell.dataset.status)])`);
}

const naturalWidth = async (page: Page, selector: string): Promise<number> => {
  await page.waitForFunction(
    (css) =>
      (
        globalThis as unknown as { document: { querySelector(s: string): { complete: boolean } | null } }
      ).document.querySelector(css)?.complete === true,
    selector,
  );
  return page
    .locator(selector)
    .evaluate((image) => (image as unknown as { naturalWidth: number }).naturalWidth);
};

describe('gallery by product', () => {
  it('draws a row per product and a column per variant; filters, searches and picks into the redo command', async () => {
    const dir = tempDir();
    const { summary, entries } = productRun(dir, OUTPUTS);
    const file = join(dir, GALLERY_FILE);
    await writeGallery(file, summary, entries);
    const { page, problems } = await openGallery(browser, file);

    expect(await page.locator('#columns > *').allTextContents()).toEqual([
      'product',
      'studio',
      'lifestyle',
      'detail',
    ]);
    expect(await grid(page)).toEqual([
      ['lamp-01', 'completed', 'none', 'failed'],
      ['sofa-02', 'completed', 'completed', 'completed'],
      ['chair-03', 'completed', 'failed', 'completed'],
      ['rug-04', 'completed', 'completed', 'completed'],
    ]);
    expect(await page.locator('#shown').textContent()).toBe('showing 4 of 4 products');
    expect(await page.locator('.run').textContent()).toMatch(
      /^4 products · 3 variants · 11 items · 10 images · /,
    );
    const row = (product: string) => page.locator(`#rows .row[data-product="${product}"]`);
    const cell = (id: string) => page.locator(`#rows .cell[data-id="${id}"]`);
    expect(
      await row('sofa-02')
        .locator('.vars > div')
        .evaluateAll((pairs) => pairs.map((pair) => (pair as unknown as { title: string }).title)),
    ).toEqual(['name: Linen sofa', 'colour: sage green', 'category: sofa']);
    expect(await row('lamp-01').locator('.cell.none').textContent()).toBe('no lifestyle');
    expect(await cell('sofa-02-studio').locator('.more').textContent()).toBe('+1');
    expect(await cell('chair-03-lifestyle').locator('.error').textContent()).toBe(
      'generation_error/content_policy: refused: Oak chair',
    );
    expect(await cell('sofa-02-lifestyle').locator('.checks').textContent()).toBe(
      'image 1: blank warn: mostly one colour',
    );
    expect(await cell('sofa-02-lifestyle').getAttribute('title')).toMatch(
      /^Linen sofa, sage green, lifestyle shot\n4:5 · 1K · 1\/1 image · 1 credit · /,
    );
    // Real PNGs, decoded by the browser.
    expect(await naturalWidth(page, '#rows .cell[data-id="chair-03-detail"] img')).toBe(
      PNG.sync.read(readFileSync(join(dir, 'images/chair-03-detail_0.png'))).width,
    );

    // Hostile catalog text is text: nothing ran, nothing injected, the data block did not end early.
    expect(await row('rug-04').locator('.vars dd').first().textContent()).toBe(HOSTILE);
    await row('rug-04').locator('.vars dd').first().hover();
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.locator('#rows img[src="x"]').count()).toBe(0);

    // Filters keep the products with a matching item and dim their other cells.
    const failed = page.locator('button[data-filter="failed"]');
    expect(await failed.locator('.count').textContent()).toBe('2');
    await failed.click();
    expect(await grid(page)).toEqual([
      ['lamp-01', 'dim completed', 'none', 'failed'],
      ['chair-03', 'dim completed', 'failed', 'dim completed'],
    ]);
    expect(await page.locator('#shown').textContent()).toBe('showing 2 of 4 products');
    expect(new URL(page.url()).hash).toBe('#failed');
    const checks = page.locator('button[data-filter="checks"]');
    expect(await checks.locator('.count').textContent()).toBe('1');
    await checks.click();
    expect(await grid(page)).toEqual([['sofa-02', 'dim completed', 'completed', 'dim completed']]);
    await page.locator('button[data-filter="all"]').click();

    // The search: catalog values, column=value, ids; every word must be found.
    await page.locator('#search').fill('OAK');
    expect((await grid(page)).map(([product]) => product)).toEqual(['chair-03']);
    await page.locator('#search').fill('colour=sage');
    expect((await grid(page)).map(([product]) => product)).toEqual(['sofa-02']);
    await page.locator('#search').fill('category=rug');
    expect((await grid(page)).map(([product]) => product)).toEqual(['rug-04']);
    await page.locator('#search').fill('lamp-01-detail');
    expect((await grid(page)).map(([product]) => product)).toEqual(['lamp-01']);
    await page.locator('#search').fill('white lamp');
    expect((await grid(page)).map(([product]) => product)).toEqual(['lamp-01']);
    await page.locator('#search').fill('oak');
    await failed.click();
    expect(await grid(page)).toEqual([['chair-03', 'dim completed', 'failed', 'dim completed']]);
    await page.locator('#search').fill('sofa');
    expect(await grid(page)).toEqual([]);
    expect(await page.locator('#empty').textContent()).toBe('No products with failed items match "sofa".');
    expect(await page.locator('#empty').isVisible()).toBe(true);
    await page.locator('#search').fill('');
    await page.locator('button[data-filter="all"]').click();
    expect(await page.locator('#empty').isHidden()).toBe(true);

    // Picks: a cell, then a whole row, then a column of what the filter shows.
    expect(await page.locator('#review').isHidden()).toBe(true);
    await cell('sofa-02-lifestyle').locator('.pick').check();
    expect(await page.locator('#redo').textContent()).toBe(
      'pixelmill redo pixelmill/furniture-variants --ids sofa-02-lifestyle',
    );
    await row('lamp-01').locator('.pick-row').check();
    expect(await page.locator('#picked').textContent()).toBe('3 selected');
    expect(await page.locator('#redo').textContent()).toBe(
      'pixelmill redo pixelmill/furniture-variants --ids sofa-02-lifestyle,lamp-01-studio,lamp-01-detail',
    );
    expect(await cell('lamp-01-detail').locator('.pick').isChecked()).toBe(true);
    await page.locator('#clear-picks').click();
    expect(await page.locator('#review').isHidden()).toBe(true);
    await failed.click();
    await page.locator('#columns .pick-column[data-column="1"]').check();
    expect(await page.locator('#redo').textContent()).toBe(
      'pixelmill redo pixelmill/furniture-variants --ids chair-03-lifestyle',
    );
    await page.locator('button[data-filter="all"]').click();
    await page.locator('#columns .pick-column[data-column="2"]').check();
    expect(await page.locator('#redo').textContent()).toBe(
      'pixelmill redo pixelmill/furniture-variants --ids chair-03-lifestyle,lamp-01-detail,sofa-02-detail,chair-03-detail,rug-04-detail',
    );
    // The lifestyle column is only partly picked now.
    expect(
      await page
        .locator('#columns .pick-column[data-column="1"]')
        .evaluate((box) => (box as unknown as { indeterminate: boolean }).indeterminate),
    ).toBe(true);
    const href = (await page.locator('#ids-file').getAttribute('href'))!;
    expect(decodeURIComponent(href.replace(/^data:text\/plain;charset=utf-8,/, '')).split('\n')).toHaveLength(
      6,
    );
    await page.locator('#clear-picks').click();

    // The viewer: the full image, then the next image of the items shown; x picks the one shown.
    await cell('sofa-02-studio').locator('a.full').click();
    await expect.poll(() => page.locator('#viewer').isVisible()).toBe(true);
    expect(await naturalWidth(page, '#viewer img')).toBe(
      PNG.sync.read(readFileSync(join(dir, 'images/sofa-02-studio_0.png'))).width,
    );
    expect(await page.locator('#viewer .caption').textContent()).toBe('sofa-02-studio, image 1 of 2');
    await page.keyboard.press('ArrowRight');
    expect(await page.locator('#viewer .caption').textContent()).toBe('sofa-02-studio, image 2 of 2');
    await page.keyboard.press('ArrowRight');
    expect(await page.locator('#viewer .caption').textContent()).toBe('sofa-02-lifestyle, image 1 of 1');
    await page.keyboard.press('x');
    expect(await page.locator('#redo').textContent()).toBe(
      'pixelmill redo pixelmill/furniture-variants --ids sofa-02-lifestyle',
    );
    await page.keyboard.press('Escape');
    expect(await cell('sofa-02-lifestyle').locator('.pick').isChecked()).toBe(true);

    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it('opens on the filter named in the hash; items without a product keep the item gallery', async () => {
    const dir = tempDir();
    const { summary, entries } = productRun(dir, OUTPUTS);
    await writeGallery(join(dir, GALLERY_FILE), summary, entries);
    const { page, problems } = await openGallery(browser, join(dir, GALLERY_FILE), '#failed');
    expect((await grid(page)).map(([product]) => product)).toEqual(['lamp-01', 'chair-03']);
    expect(problems).toEqual([]);
    await page.close();

    const plain = entries.map(({ line, item }) => {
      const { product: _p, variant: _v, variables: _vars, ...rest } = line as VariantLine;
      return { item, line: rest };
    });
    await writeGallery(join(dir, 'plain.html'), summary, plain);
    const html = readFileSync(join(dir, 'plain.html'), 'utf8');
    expect(html).not.toContain('gallery-cells');
    expect(html.match(/<article class="card"/g)).toHaveLength(OUTPUTS.length);
  });

  it('draws 10,000 products x 3 variants a few rows at a time: scroll, filter and search reach every row', async () => {
    const dir = tempDir();
    const png = new PNG({ width: 64, height: 80 });
    png.data.fill(0x99);
    mkdirSync(join(dir, 'images'));
    writeFileSync(join(dir, 'images/shared.png'), PNG.sync.write(png));
    const variants = ['studio', 'lifestyle', 'detail'];
    const statusOf = (k: number, v: number): ItemStatus => ((k * 3 + v) % 97 === 5 ? 'failed' : 'completed');
    let failedProducts = 0;
    function* entries(): Generator<GalleryEntry> {
      for (let k = 0; k < 10_000; k++) {
        const product = `sku-${String(k).padStart(5, '0')}`;
        let failed = false;
        for (const [v, variant] of variants.entries()) {
          // Every tenth product has no lifestyle shot.
          if (v === 1 && k % 10 === 0) continue;
          const status = statusOf(k, v);
          failed ||= status === 'failed';
          const id = `${product}-${variant}`;
          const line: VariantLine = {
            id,
            product,
            variant,
            variables: { name: `chair ${k}`, colour: k % 2 === 0 ? 'oak' : 'walnut' },
            status,
            task_id: `t${k}`,
            attempts: 1,
            credits_cost: 1,
            images:
              status === 'completed'
                ? [{ path: 'images/shared.png', sha256: '', bytes: 0, source_url: '' }]
                : [],
            error: status === 'failed' ? { type: 'generation_error', code: 'x', message: 'no' } : null,
          };
          yield {
            line,
            item: { id, prompt: `chair ${k}, ${variant}`, model: 'm', size: '4:5', resolution: '1K', n: 1 },
          };
        }
        if (failed) failedProducts++;
      }
    }
    const counts = { completed: 0, failed: 0, cancelled: 0, expired: 0, skipped: 0 };
    const file = join(dir, GALLERY_FILE);
    await writeGallery(file, { ...productRun(dir, []).summary, items: 29_000, counts }, entries());
    const { page, problems } = await openGallery(browser, file);

    const drawnRows = () => page.locator('#rows .row').count();
    expect(await page.locator('#shown').textContent()).toBe('showing 10000 of 10000 products');
    expect(await drawnRows()).toBeGreaterThan(3);
    expect(await drawnRows()).toBeLessThan(20);
    expect((await grid(page))[0]).toEqual(['sku-00000', 'completed', 'none', 'completed']);
    expect(await naturalWidth(page, '#rows .cell[data-id="sku-00000-studio"] img')).toBe(64);

    // Scrolled to the end: the last products are drawn, the first are gone, as many rows as before.
    await page.evaluate('window.scrollTo(0, document.body.scrollHeight)');
    await expect.poll(async () => (await grid(page)).at(-1)?.[0]).toBe('sku-09999');
    expect(await page.locator('#rows .row[data-product="sku-00000"]').count()).toBe(0);
    expect(await drawnRows()).toBeLessThan(20);
    expect(await page.evaluate('document.getElementsByTagName("*").length')).toBeLessThan(1_000);

    await page.locator('button[data-filter="failed"]').click();
    expect(await page.locator('#shown').textContent()).toBe(`showing ${failedProducts} of 10000 products`);
    await page.locator('#search').fill('sku-09');
    await page.locator('button[data-filter="all"]').click();
    expect(await page.locator('#shown').textContent()).toBe('showing 1000 of 10000 products');
    await page.locator('#search').fill('chair 7777 colour=walnut');
    expect(await grid(page)).toEqual([['sku-07777', 'completed', 'completed', 'completed']]);
    expect(problems).toEqual([]);
    await page.close();
  }, 180_000);

  it('makes the demo screenshot (copied to docs/gallery-products.png with PIXELMILL_DOCS_SCREENSHOT=1)', async () => {
    const dir = tempDir();
    const { summary, entries } = productRun(dir, OUTPUTS);
    await writeGallery(join(dir, GALLERY_FILE), summary, entries);
    const { page, problems } = await openGallery(browser, join(dir, GALLERY_FILE));
    await page.locator('#rows .cell[data-id="chair-03-lifestyle"] .pick').check();
    await page.waitForFunction(() =>
      Array.from(
        (globalThis as unknown as { document: { images: ArrayLike<{ complete: boolean }> } }).document.images,
      ).every((image) => image.complete),
    );
    const screenshot = join(dir, 'gallery-products.png');
    await page.screenshot({ path: screenshot });
    expect(PNG.sync.read(readFileSync(screenshot)).width).toBe(1280);
    expect(problems).toEqual([]);
    if (process.env.PIXELMILL_DOCS_SCREENSHOT === '1') copyFileSync(screenshot, DOCS_SCREENSHOT);
    await page.close();
  });

  it('is the page writeReport makes for a manifest with variants, from its report lines', async () => {
    const fixture = writeManifest(
      [
        'name: variants-report',
        'output: ./out',
        'items_file: products.csv',
        'defaults: { prompt_template: "A {colour} {name}" }',
        'variants:',
        '  - { id: studio, prompt_template: "A {colour} {name} on white" }',
        '  - { id: room, size: "16:9", where: { category: sofa } }',
        '  - { id: detail, prompt_template: "A close-up of a {name}" }',
      ],
      {
        'products.csv': [
          'id,name,colour,category',
          'chair-1,oak chair,natural,chair',
          'sofa-2,linen sofa,sage,sofa',
          'sofa-3,velvet sofa,rust,sofa',
        ].join('\n'),
      },
    );
    await reportWithOneFailure(fixture.file, {
      runId: 'pixelmill/variants-report',
      now: Date.UTC(2026, 10, 26, 12),
      startedAt: '2026-11-26T11:00:00.000Z',
    });
    const { page, problems } = await openGallery(browser, join(fixture.outputDir, GALLERY_FILE));
    expect(await page.locator('#columns > *').allTextContents()).toEqual([
      'product',
      'studio',
      'room',
      'detail',
    ]);
    expect(await grid(page)).toEqual([
      ['chair-1', 'cancelled', 'none', 'failed'],
      ['sofa-2', 'cancelled', 'cancelled', 'cancelled'],
      ['sofa-3', 'cancelled', 'cancelled', 'cancelled'],
    ]);
    // Plan index 1 is chair-1's detail (the chair has no room shot); the rest never ran.
    await page.locator('button[data-filter="failed"]').click();
    expect(await grid(page)).toEqual([['chair-1', 'dim cancelled', 'none', 'failed']]);
    expect(await page.locator('#rows .cell[data-id="chair-1-detail"]').getAttribute('title')).toMatch(
      /^A close-up of a oak chair\n/,
    );
    await page.locator('button[data-filter="all"]').click();
    await page.locator('#search').fill('colour=sage');
    expect((await grid(page)).map(([product]) => product)).toEqual(['sofa-2']);
    expect(problems).toEqual([]);
    await page.close();
  });
});
