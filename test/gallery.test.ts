// The run gallery (`<output>/index.html`, issue #4 section 3) opened from file:// in a real
// headless Chromium: every item rendered in order, real PNG thumbnails loaded, the status filters
// and the search, the image viewer, hostile prompts shown as text, 10,000 items with only the
// thumbnails near the viewport loaded, and writeReport writing the page beside report.jsonl.
// PIXELMILL_DOCS_SCREENSHOT=1 also copies the demo screenshot to docs/gallery.png.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PNG } from 'pngjs';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GALLERY_FILE, writeGallery, type GalleryEntry, type GallerySummary } from '../report/gallery.js';
import type { ReportLine } from '../report/report-line.js';
import type { ItemStatus } from '../common/types.js';
import { renderResultPng } from '../emulator/apimart/images/render.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { writeManifest } from './activities-fixture.js';
import { launchChromium } from './support/browser.js';
import { openGallery, reportWithOneFailure, summaryOf } from './support/gallery.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

interface PageImage {
  src: string;
  complete: boolean;
}
/** The page's document as browser-side callbacks see it (this project compiles without the DOM lib). */
interface PageDocument {
  images: ArrayLike<PageImage>;
  querySelector(css: string): PageImage | null;
}
const DOCS_SCREENSHOT = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'gallery.png');

const HOSTILE_PROMPT =
  `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">` +
  `" onmouseover="window.__pwned = 3" ' & a chair`;
const HOSTILE_ERROR = {
  type: 'generation_error',
  code: 'content_policy',
  message: '<b>not bold</b> & refused',
};

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  removeTempDirs();
});

interface DemoItem {
  id: string;
  prompt: string;
  size?: string;
  resolution?: '1K' | '2K';
  n?: number;
  status: ItemStatus;
  /** Images stored (default: n when completed, none otherwise). */
  stored?: number;
  credits?: number;
  error?: ReportLine['error'];
  /** Path of image `index`; default `<id>_<index>.png`. */
  path?: (index: number) => string;
}

const DEMO: DemoItem[] = [
  { id: 'oak-chair', prompt: 'a solid oak dining chair, studio light', size: '4:3', status: 'completed' },
  {
    id: 'walnut-table',
    prompt: 'a walnut side table with brass legs on a white background',
    size: '16:9',
    resolution: '2K',
    status: 'completed',
    credits: 2,
  },
  {
    id: 'brass-lamp',
    prompt: 'a brass desk lamp, warm light',
    size: '1:1',
    n: 2,
    status: 'completed',
    credits: 2,
  },
  {
    id: 'linen-sofa',
    prompt: 'a three-seat linen sofa in sage green, three-quarter view, soft shadows on the floor',
    status: 'failed',
    error: {
      type: 'generation_error',
      code: 'generation_failed',
      message: 'the model could not render this prompt',
    },
  },
  {
    id: 'ceramic-vase',
    prompt: 'a tall matte ceramic vase with dried grasses',
    size: '3:4',
    status: 'completed',
  },
  {
    id: 'glass-pendant',
    prompt: 'a smoked glass pendant light',
    size: '1:1',
    n: 2,
    status: 'expired',
    stored: 1,
    credits: 2,
    error: {
      type: 'ResultExpired',
      code: 'result_expired',
      message: 'the result URL expired before download',
    },
  },
  { id: 'rattan-chair', prompt: 'a rattan lounge chair on a terrace', size: '4:3', status: 'completed' },
  {
    id: 'marble-desk',
    prompt: 'a white marble writing desk',
    status: 'skipped',
    error: { type: 'BudgetExhausted', code: 'budget_exhausted', message: 'the credit budget was spent' },
  },
  { id: 'velvet-ottoman', prompt: 'a round velvet ottoman in teal', status: 'failed', error: HOSTILE_ERROR },
  {
    id: 'teak-bench',
    prompt: 'a teak garden bench',
    status: 'cancelled',
    error: { type: 'NotRun', code: 'not_run', message: 'the run ended before this item was submitted' },
  },
  {
    id: 'wool-rug',
    prompt: 'a hand-woven wool rug, top view',
    size: '1:1',
    n: 4,
    status: 'completed',
    credits: 4,
  },
  {
    id: 'lamp-7',
    // Stored under a path with a space and a "#", which the page must percent-encode.
    prompt: 'a tall paper floor lamp',
    size: '3:4',
    status: 'completed',
    path: (index) => `shots/lamp #7 ${index}.png`,
  },
];
const HOSTILE: DemoItem = { id: 'hostile-prompt', prompt: HOSTILE_PROMPT, size: '1:1', status: 'completed' };

/** Writes each demo item's images (real PNGs, the emulator's renderer) and returns the page data. */
function demoRun(dir: string, demo: DemoItem[]): { summary: GallerySummary; entries: GalleryEntry[] } {
  const counts: Record<ItemStatus, number> = {
    completed: 0,
    failed: 0,
    cancelled: 0,
    expired: 0,
    skipped: 0,
  };
  const entries = demo.map((spec, position): GalleryEntry => {
    const item: PlannedItem = {
      id: spec.id,
      prompt: spec.prompt,
      model: 'nano-banana-pro',
      size: spec.size ?? '1:1',
      resolution: spec.resolution ?? '1K',
      n: spec.n ?? 1,
    };
    const stored = spec.stored ?? (spec.status === 'completed' ? item.n : 0);
    const images = Array.from({ length: stored }, (_, index) => {
      const path = spec.path?.(index) ?? `${spec.id}_${index}.png`;
      const png = renderResultPng({
        prompt: item.prompt,
        index,
        size: item.size,
        resolution: item.resolution,
      });
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), png);
      return {
        path,
        sha256: '00'.repeat(32),
        bytes: png.length,
        source_url: `http://results.test/${index}.png`,
      };
    });
    counts[spec.status] += 1;
    const line: ReportLine = {
      id: spec.id,
      status: spec.status,
      task_id: spec.status === 'cancelled' || spec.status === 'skipped' ? null : `task_${position}`,
      attempts: spec.status === 'failed' ? 3 : 1,
      credits_cost: spec.credits ?? (spec.status === 'completed' ? 1 : 0),
      images,
      error: spec.error ?? null,
    };
    return { line, item };
  });
  const summary = summaryOf('furniture-catalog', entries, counts, [
    '2026-05-01T11:00:00.000Z',
    '2026-05-01T11:04:12.000Z',
  ]);
  return { summary, entries };
}

/** Ids of the cards currently displayed. */
async function visibleIds(page: Page): Promise<string[]> {
  return page.evaluate(`Array.from(document.querySelectorAll('main .card'))
    .filter((card) => getComputedStyle(card).display !== 'none').map((card) => card.dataset.id)`);
}

/** naturalWidth of the image once it has loaded (0 if it failed). */
async function loadedWidth(page: Page, selector: string): Promise<number> {
  const image = page.locator(selector);
  await image.scrollIntoViewIfNeeded();
  // A function, not a string: the page's CSP forbids eval, which a string predicate needs.
  await page.waitForFunction(
    (css) =>
      (globalThis as unknown as { document: PageDocument }).document.querySelector(css)?.complete === true,
    selector,
  );
  return image.evaluate((element) => (element as unknown as { naturalWidth: number }).naturalWidth);
}

function pngSize(file: string): { width: number; height: number; bytes: number } {
  const bytes = readFileSync(file);
  const png = PNG.sync.read(bytes);
  return { width: png.width, height: png.height, bytes: bytes.length };
}

describe('gallery (index.html)', () => {
  it('renders every item, loads thumbnails, filters, searches and keeps hostile text inert', async () => {
    const dir = tempDir();
    const { summary, entries } = demoRun(dir, [...DEMO, HOSTILE]);
    const file = join(dir, GALLERY_FILE);
    await writeGallery(file, summary, entries);
    const { page, problems } = await openGallery(browser, file);

    expect(await page.locator('main .card').count()).toBe(entries.length);
    expect(await page.locator('main .card .id').allTextContents()).toEqual(
      entries.map(({ line }) => line.id),
    );
    expect(await page.locator('h1').textContent()).toBe('furniture-catalog');
    expect(await page.locator('#shown').textContent()).toBe(`showing ${entries.length} of ${entries.length}`);
    const card = (id: string) => page.locator(`main .card[data-id="${id}"]`);
    expect(await card('walnut-table').locator('.facts').textContent()).toMatch(
      /^16:9 · 2K · 1\/1 image · 2 credits · /,
    );
    expect(await card('wool-rug').locator('img').count()).toBe(4);
    expect(await card('linen-sofa').locator('.error').textContent()).toBe(
      'generation_error/generation_failed: the model could not render this prompt',
    );
    expect(await card('glass-pendant').locator('.badge').textContent()).toBe('expired');
    expect(await page.locator('main img:not([loading="lazy"])').count()).toBe(0);

    // Real PNGs decoded by the browser: the first thumbnail and one whose path needs encoding.
    expect(await loadedWidth(page, 'main .card[data-id="oak-chair"] img')).toBe(1024);
    expect(await loadedWidth(page, 'main .card[data-id="lamp-7"] img')).toBe(
      pngSize(join(dir, 'shots/lamp #7 0.png')).width,
    );

    // The hostile prompt and error are text: nothing ran, no element was injected.
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await card('hostile-prompt').locator('.prompt').textContent()).toBe(HOSTILE_PROMPT);
    expect(await card('hostile-prompt').locator('.prompt').getAttribute('title')).toBe(HOSTILE_PROMPT);
    expect(await card('hostile-prompt').locator('.prompt *').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(1);
    expect(await card('velvet-ottoman').locator('.error').textContent()).toBe(
      'generation_error/content_policy: <b>not bold</b> & refused',
    );
    await card('hostile-prompt').locator('.prompt').hover();
    expect(await page.evaluate('window.__pwned')).toBeUndefined();

    // Filters: failed only, then all again; the counts on the buttons come from the summary.
    const failed = page.locator('button[data-filter="failed"]');
    expect(await failed.locator('.count').textContent()).toBe('2');
    await failed.click();
    expect(await visibleIds(page)).toEqual(['linen-sofa', 'velvet-ottoman']);
    expect(await failed.getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator('#shown').textContent()).toBe(`showing 2 of ${entries.length}`);
    expect(new URL(page.url()).hash).toBe('#failed');
    await page.locator('button[data-filter="completed"]').click();
    expect(await visibleIds(page)).toEqual(
      entries.filter(({ line }) => line.status === 'completed').map(({ line }) => line.id),
    );
    await page.locator('button[data-filter="all"]').click();
    expect(await visibleIds(page)).toHaveLength(entries.length);

    // Search by prompt words or id, combined with a status filter.
    await page.locator('#search').fill('LAMP');
    expect(await visibleIds(page)).toEqual(['brass-lamp', 'lamp-7']);
    expect(await page.locator('#shown').textContent()).toBe(`showing 2 of ${entries.length}`);
    expect(await page.locator('#empty').isHidden()).toBe(true);
    await page.locator('button[data-filter="failed"]').click();
    expect(await visibleIds(page)).toEqual([]);
    // An empty result says so.
    expect(await page.locator('#empty').isVisible()).toBe(true);
    expect(await page.locator('#empty').textContent()).toBe('No failed items match "LAMP".');
    await page.locator('#search').fill('');
    expect(await page.locator('#empty').isHidden()).toBe(true);
    await page.locator('button[data-filter="all"]').click();

    // A click on a thumbnail shows the full image; its link is the image file itself.
    const thumbnail = card('brass-lamp').locator('a.full').nth(1);
    expect(await thumbnail.getAttribute('href')).toBe('brass-lamp_1.png');
    await thumbnail.click();
    await expect.poll(() => page.locator('#viewer').isVisible()).toBe(true);
    expect(await loadedWidth(page, '#viewer img')).toBe(1024);
    expect(await page.locator('#viewer .caption').textContent()).toBe('brass-lamp, image 2 of 2');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.locator('#viewer').isVisible()).toBe(false);

    const screenshot = join(dir, 'screenshot.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    const shot = pngSize(screenshot);
    expect(shot.width).toBe(1280);
    expect(shot.height).toBeGreaterThan(900);
    expect(shot.bytes).toBeGreaterThan(20_000);

    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it('shows thumbnails, steps through images, and turns a selection into the redo command', async () => {
    const dir = tempDir();
    const { summary, entries } = demoRun(dir, DEMO.slice(0, 4));
    // The first item's image has a thumbnail beside it, as a checked run stores.
    const [first] = entries;
    const thumbnail = `.thumbnails/${first!.line.images[0]!.path}.jpg`;
    mkdirSync(join(dir, '.thumbnails'), { recursive: true });
    writeFileSync(
      join(dir, thumbnail),
      await sharp(join(dir, first!.line.images[0]!.path)).resize(320).jpeg().toBuffer(),
    );
    first!.line.images[0]!.thumbnail = thumbnail;
    await writeGallery(join(dir, GALLERY_FILE), summary, entries);
    const { page, problems } = await openGallery(browser, join(dir, GALLERY_FILE));
    const card = (id: string) => page.locator(`main .card[data-id="${id}"]`);
    const firstId = first!.line.id;
    expect(await card(firstId).locator('img').getAttribute('src')).toBe(thumbnail);
    expect(await loadedWidth(page, `main .card[data-id="${firstId}"] img`)).toBe(320);
    expect(await card(firstId).locator('a.full').getAttribute('href')).toBe(first!.line.images[0]!.path);

    // Picked by checkbox: the command line and the ids file say so.
    expect(await page.locator('#review').isHidden()).toBe(true);
    const withImages = entries.filter(({ line }) => line.images.length > 0).map(({ line }) => line.id);
    await card(withImages[1]!).locator('.pick').check();
    await card(firstId).locator('.pick').check();
    expect(await page.locator('#picked').textContent()).toBe('2 selected');
    expect(await page.locator('#redo').textContent()).toBe(
      `pixelmill redo pixelmill/furniture-catalog --ids ${withImages[1]},${firstId}`,
    );
    const href = (await page.locator('#ids-file').getAttribute('href'))!;
    expect(decodeURIComponent(href.replace(/^data:text\/plain;charset=utf-8,/, ''))).toBe(
      `${withImages[1]}\n${firstId}\n`,
    );

    // The viewer: the full image, next and previous with the arrow keys, x to unpick.
    await card(firstId).locator('a.full').first().click();
    await expect.poll(() => page.locator('#viewer').isVisible()).toBe(true);
    expect(await loadedWidth(page, '#viewer img')).toBe(1024);
    expect(await page.locator('#viewer .viewer-pick').isChecked()).toBe(true);
    await page.keyboard.press('ArrowRight');
    expect(await page.locator('#viewer .caption').textContent()).toMatch(
      new RegExp(`^${withImages[1]}, image 1`),
    );
    await page.keyboard.press('x');
    expect(await page.locator('#picked').textContent()).toBe('1 selected');
    expect(await card(withImages[1]!).locator('.pick').isChecked()).toBe(false);
    await page.keyboard.press('ArrowLeft');
    expect(await page.locator('#viewer .caption').textContent()).toMatch(new RegExp(`^${firstId}, image 1`));
    await page.keyboard.press('Escape');
    await page.locator('#clear-picks').click();
    expect(await page.locator('#review').isHidden()).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('opens with the filter named in the URL hash', async () => {
    const dir = tempDir();
    const { summary, entries } = demoRun(dir, DEMO.slice(0, 4));
    await writeGallery(join(dir, GALLERY_FILE), summary, entries);
    const { page, problems } = await openGallery(browser, join(dir, GALLERY_FILE), '#failed');
    expect(await visibleIds(page)).toEqual(['linen-sofa']);
    expect(await page.locator('#shown').textContent()).toBe('showing 1 of 4');
    // Statuses absent from the run get no button, completed and failed always do.
    expect(await page.locator('.filters button').evaluateAll((buttons) => buttons.length)).toBe(3);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('writes 10,000 items as a stream; the browser loads only the thumbnails near the viewport', async () => {
    const dir = tempDir();
    const png = new PNG({ width: 64, height: 48 });
    png.data.fill(0x88);
    const bytes = PNG.sync.write(png);
    mkdirSync(join(dir, 'images'));
    const statusOf = (index: number): ItemStatus => (index % 7 === 3 ? 'failed' : 'completed');
    function* entries(): Generator<GalleryEntry> {
      for (let index = 0; index < 10_000; index++) {
        const id = `item-${String(index).padStart(5, '0')}`;
        const status = statusOf(index);
        const images =
          status === 'completed'
            ? [{ path: `images/${id}_0.png`, sha256: '', bytes: bytes.length, source_url: '' }]
            : [];
        for (const image of images) writeFileSync(join(dir, image.path), bytes);
        yield {
          item: {
            id,
            prompt: `catalog prompt number ${index}`,
            model: 'm',
            size: '4:3',
            resolution: '1K',
            n: 1,
          },
          line: {
            id,
            status,
            task_id: `task_${index}`,
            attempts: 1,
            credits_cost: status === 'completed' ? 1 : 0,
            images,
            error: status === 'failed' ? { type: 'generation_error', code: 'x', message: 'no' } : null,
          },
        };
      }
    }
    const failedCount = Array.from({ length: 10_000 }, (_, index) => statusOf(index)).filter(
      (s) => s === 'failed',
    ).length;
    const counts = {
      completed: 10_000 - failedCount,
      failed: failedCount,
      cancelled: 0,
      expired: 0,
      skipped: 0,
    };
    const file = join(dir, GALLERY_FILE);
    await writeGallery(
      file,
      {
        ...demoRun(dir, []).summary,
        items: 10_000,
        counts,
        images: counts.completed,
        credits_charged: counts.completed,
      },
      entries(),
    );

    const html = readFileSync(file, 'utf8');
    const ids = [...html.matchAll(/<article class="card" data-status="\w+" data-id="([^"]+)">/g)].map(
      (m) => m[1],
    );
    expect(ids).toHaveLength(10_000);
    expect(ids[0]).toBe('item-00000');
    expect(ids[9_999]).toBe('item-09999');
    expect(new Set(ids).size).toBe(10_000);
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);

    const { page, problems } = await openGallery(browser, file);
    expect(await page.locator('main .card').count()).toBe(10_000);
    expect(await loadedWidth(page, 'main .card[data-id="item-00000"] img')).toBe(64);
    const loaded = Number(
      await page.evaluate(
        `Array.from(document.images).filter((image) => image.complete && image.naturalWidth > 0).length`,
      ),
    );
    expect(loaded).toBeGreaterThan(0);
    expect(loaded).toBeLessThan(500);
    await page.locator('button[data-filter="failed"]').click();
    expect(await page.locator('#shown').textContent()).toBe(`showing ${failedCount} of 10000`);
    expect(await visibleIds(page)).toHaveLength(failedCount);
    await page.locator('#search').fill('number 9998');
    expect(await page.locator('#shown').textContent()).toBe('showing 0 of 10000');
    await page.locator('button[data-filter="all"]').click();
    expect(await visibleIds(page)).toEqual(['item-09998']);
    expect(problems).toEqual([]);
    await page.close();
  }, 180_000);

  it('is written by writeReport beside report.jsonl, from the same lines and the plan', async () => {
    const fixture = writeManifest([
      'name: lamps',
      'output: ./out',
      'defaults: { size: "16:9", resolution: 2K }',
      'items:',
      '  - { id: a, prompt: "a <b>bold</b> lamp" }',
      '  - { id: b, prompt: lamp b }',
      '  - { id: c, prompt: lamp c }',
    ]);
    await reportWithOneFailure(fixture.file, {
      runId: 'pixelmill/lamps',
      now: Date.UTC(2026, 4, 1, 12),
      startedAt: '2026-05-01T11:00:00.000Z',
    });

    expect(readdirSync(fixture.outputDir).sort()).toEqual([
      '.pixelmill',
      GALLERY_FILE,
      'report.jsonl',
      'summary.json',
    ]);
    const { page, problems } = await openGallery(browser, join(fixture.outputDir, GALLERY_FILE));
    const cards = await page.locator('main .card').evaluateAll((elements) =>
      elements.map((element) => {
        const card = element as unknown as { dataset: { id: string; status: string }; textContent: string };
        return [card.dataset.id, card.dataset.status];
      }),
    );
    expect(cards).toEqual([
      ['a', 'cancelled'],
      ['b', 'failed'],
      ['c', 'cancelled'],
    ]);
    expect(await page.locator('main .card[data-id="a"] .prompt').textContent()).toBe('a <b>bold</b> lamp');
    expect(await page.locator('main .card[data-id="b"] .facts').textContent()).toBe(
      '16:9 · 2K · 0/1 image · 0 credits',
    );
    expect(await page.locator('main .card[data-id="b"] .error').textContent()).toBe(
      'generation_error/generation_failed: it broke',
    );
    expect(await page.locator('.run').textContent()).toContain('3 items');
    expect(await page.locator('.run').textContent()).toContain('2026-05-01 11:00:00 UTC, 1h 0m 0s');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('makes the demo screenshot (copied to docs/gallery.png with PIXELMILL_DOCS_SCREENSHOT=1)', async () => {
    const dir = tempDir();
    const { summary, entries } = demoRun(dir, DEMO);
    await writeGallery(join(dir, GALLERY_FILE), summary, entries);
    const { page, problems } = await openGallery(browser, join(dir, GALLERY_FILE));
    // A function, not a string: the page's CSP forbids eval, which a string predicate needs.
    await page.waitForFunction(() =>
      Array.from((globalThis as unknown as { document: PageDocument }).document.images)
        .filter((image) => image.src)
        .every((image) => image.complete),
    );
    const screenshot = join(dir, 'gallery.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    const shot = pngSize(screenshot);
    expect(shot.width).toBe(1280);
    expect(shot.height).toBeGreaterThan(900);
    expect(problems).toEqual([]);
    if (process.env.PIXELMILL_DOCS_SCREENSHOT === '1') copyFileSync(screenshot, DOCS_SCREENSHOT);
    await page.close();
  });
});
