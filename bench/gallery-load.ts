// The gallery of a 10,000-image run in headless Chromium: how long until the first screen of
// thumbnails is drawn, and how many bytes that screen loads. The output is what a run leaves:
// real-size photo-like 1K PNGs (a few dozen distinct ones, hard-linked under every item's path so
// the disk holds a few dozen), each one's thumbnail made by the checks (checkStored), and the
// page written by the report's own writeGallery. It is served over loopback by a static server
// that counts bytes (as from a bucket or a shared folder), and opened from file:// too.
import {
  createReadStream,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { checkStored, thumbnailPath } from '../activities/image-checks.js';
import { DEFAULT_CHECK_LEVELS } from '../checks/image-checks.js';
import type { ItemStatus } from '../common/types.js';
import { GALLERY_FILE, writeGallery, type GalleryEntry } from '../report/gallery.js';
import type { ReportImage } from '../report/report-line.js';
import { contentTypeFor } from '../storage/content-types.js';
import { LocalResultStore } from '../storage/local.js';
import { launchChromium } from './browser.js';
import { round } from './figures.js';
import { photoLikeImage } from './photo-like.js';

export interface GalleryFigures {
  items: number;
  /** The full images' mean size: what a sheet of full images would load per card. */
  image_mean_mb: number;
  thumbnail_mean_kb: number;
  page_mb: number;
  viewport: { width: number; height: number };
  /**
   * Over loopback HTTP, one fresh browser context per trial: from navigation until the last
   * thumbnail of the first screen was painted, the median, then every trial.
   */
  first_screen_ms: number;
  first_screen_trials_ms: number[];
  /** Thumbnails painted on the first screen, and the thumbnails in the viewport (the same). */
  first_screen_thumbnails: number;
  first_screen_in_view: number;
  /** Until the whole page was parsed (DOMContentLoaded), the median. */
  parsed_ms: number;
  /** What the page loaded until its load event: the page itself, thumbnails, full images. */
  loaded_kb: number;
  loaded_requests: { page: number; thumbnails: number; full_images: number };
  /** Opened from file://, as a user opens it from the output folder: the same two figures. */
  file_first_screen_ms: number;
  file_parsed_ms: number;
}

export const VIEWPORT = { width: 1440, height: 900 };
export const TRIALS = 3;
/** Distinct images: the 1K sizes of the four common aspect ratios. */
const SIZES = [
  { size: '1:1', width: 1024, height: 1024 },
  { size: '16:9', width: 1024, height: 576 },
  { size: '2:3', width: 683, height: 1024 },
  { size: '4:5', width: 819, height: 1024 },
];
const DISTINCT_PER_SIZE = 8;

/**
 * The page as the bench opens it: the gallery's own file with `elementtiming` on its thumbnails,
 * so that Chromium reports when each was painted (the Element Timing API). Nothing else differs;
 * the bytes counted are the page's own.
 */
const TIMED_PAGE = 'index-timed.html';

/**
 * After the page has loaded: when the last thumbnail of the first screen was painted, and when
 * the whole page was parsed (DOMContentLoaded), on the page's own clock. Painted thumbnails are
 * those Chromium reported with a visible part (offscreen cards are not painted at all).
 */
export const PAINT_TIMES = `new Promise((resolve, reject) => {
  setTimeout(() => reject(new Error('Chromium reported no painted thumbnail in 10 s')), 10000);
  const images = [...document.images];
  // The thumbnails in the viewport, told by the browser in one callback for all (a
  // getBoundingClientRect per image would lay out each skipped card: minutes for 10,000).
  const inView = new Promise((done) => {
    const observer = new IntersectionObserver((entries) => {
      observer.disconnect();
      done(entries.filter((entry) => entry.isIntersecting).length);
    });
    for (const img of images) observer.observe(img);
  });
  new PerformanceObserver((list) => {
    const painted = list.getEntries().filter((e) => e.identifier === 'thumbnail' && e.intersectionRect.width > 0);
    const nav = performance.getEntriesByType('navigation')[0];
    inView.then((count) =>
      resolve({
        thumbnails: painted.length,
        in_view: count,
        last_painted_ms: Math.max(...painted.map((e) => e.renderTime || e.loadTime)),
        parsed_ms: nav.domContentLoadedEventEnd,
      }),
    );
  }).observe({ type: 'element', buffered: true });
})`;

export interface PaintTimes {
  thumbnails: number;
  /** Thumbnails in the viewport once loaded: each must have been painted. */
  in_view: number;
  last_painted_ms: number;
  parsed_ms: number;
}

export interface Counters {
  bytes: number;
  page: number;
  thumbnails: number;
  full_images: number;
}

export function staticServer(
  root: string,
  counters: Counters,
  timedPage = TIMED_PAGE,
  page = GALLERY_FILE,
): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname)).replace(
      /^\/+/,
      '',
    );
    const file = join(root, path);
    if (!file.startsWith(root) || path.includes('..')) return void response.writeHead(403).end();
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      return void response.writeHead(404).end();
    }
    if (path === timedPage) size = statSync(join(root, page)).size;
    counters.bytes += size;
    if (path.startsWith('.thumbnails/')) counters.thumbnails++;
    else if (path === timedPage) counters.page++;
    else counters.full_images++;
    response.writeHead(200, { 'content-type': contentTypeFor(file) });
    createReadStream(file).pipe(response);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}/` });
    }),
  );
}

/** One of the few real images a benchmark's items share, with its thumbnail, as a report has it. */
export interface DistinctImage {
  size: string;
  image: ReportImage;
}

/**
 * The distinct images, written under `dir/distinct/`: photo-like PNGs of the 1K sizes, each
 * thumbnail made by the checks as a run makes it.
 */
export async function distinctImages(dir: string): Promise<DistinctImage[]> {
  const store = new LocalResultStore(dir);
  const distinct: DistinctImage[] = [];
  for (const [s, spec] of SIZES.entries()) {
    for (let k = 0; k < DISTINCT_PER_SIZE; k++) {
      const bytes = await photoLikeImage({ width: spec.width, height: spec.height, format: 'png' });
      const path = `distinct/${s}-${k}.png`;
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), bytes);
      const checked = await checkStored({ meta: { checks: DEFAULT_CHECK_LEVELS }, store }, bytes, {
        path,
        ext: 'png',
        item: { size: spec.size, resolution: '1K' },
        metadata: {},
      });
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      distinct.push({
        size: spec.size,
        image: {
          path,
          sha256,
          bytes: bytes.length,
          source_url: `https://results.example/${sha256}.png`,
          ...checked,
        },
      });
    }
  }
  return distinct;
}

/** `image` stored again at `path` (a hard link, its thumbnail too): what the report line names. */
export function linkImage(dir: string, image: ReportImage, path: string): ReportImage {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  mkdirSync(dirname(join(dir, thumbnailPath(path))), { recursive: true });
  linkSync(join(dir, image.path), join(dir, path));
  linkSync(join(dir, image.thumbnail!), join(dir, thumbnailPath(path)));
  return { ...image, path, thumbnail: thumbnailPath(path) };
}

/** The mean size of the distinct images and of their thumbnails. */
export function meanSizes(dir: string, distinct: DistinctImage[]): { imageMb: number; thumbKb: number } {
  const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
  return {
    imageMb: mean(distinct.map(({ image }) => image.bytes)) / 1e6,
    thumbKb: mean(distinct.map(({ image }) => statSync(join(dir, image.thumbnail!)).size)) / 1024,
  };
}

/** The output of a finished `items`-item run: images, thumbnails and the gallery page. */
async function galleryOutput(dir: string, items: number): Promise<{ imageMb: number; thumbKb: number }> {
  const distinct = await distinctImages(dir);
  const entries: GalleryEntry[] = [];
  for (let k = 0; k < items; k++) {
    const id = `sku-${String(k).padStart(5, '0')}`;
    const { size, image } = distinct[k % distinct.length]!;
    const stored = linkImage(dir, image, `images/${id}.png`);
    const status: ItemStatus = 'completed';
    entries.push({
      item: {
        id,
        prompt: `product ${k}: a linen armchair in a sunlit living room, oak floor, soft morning light, 35 mm`,
        model: 'image-model-1',
        size,
        resolution: '1K',
        n: 1,
      },
      line: {
        id,
        status,
        task_id: `task_${String(k).padStart(8, '0')}`,
        attempts: 1,
        credits_cost: 1,
        images: [stored],
        error: null,
      },
    });
  }
  const counts = {
    queued: 0,
    submitted: 0,
    processing: 0,
    storing: 0,
    completed: items,
    failed: 0,
    cancelled: 0,
    expired: 0,
    skipped: 0,
  };
  await writeGallery(
    join(dir, GALLERY_FILE),
    {
      manifest: 'bench-gallery',
      run_id: 'pixelmill/bench-gallery',
      items,
      counts,
      images: items,
      credits_charged: items,
      started_at: '2026-11-24T00:00:00.000Z',
      finished_at: '2026-11-24T02:00:00.000Z',
      emulated: true,
    },
    entries,
  );
  const page = readFileSync(join(dir, GALLERY_FILE), 'utf8');
  writeFileSync(
    join(dir, TIMED_PAGE),
    page.replaceAll('loading="lazy"', 'loading="lazy" elementtiming="thumbnail"'),
  );
  return meanSizes(dir, distinct);
}

/** When the first screen's thumbnails were painted, from navigation, in a fresh browser context. */
async function firstScreen(browser: Browser, url: string): Promise<PaintTimes> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  try {
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load', timeout: 60_000 });
    return (await page.evaluate(PAINT_TIMES)) as PaintTimes;
  } finally {
    await context.close();
  }
}

export const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function galleryBenchmark(items: number): Promise<GalleryFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-gallery-'));
  const browser = await launchChromium();
  const counters: Counters = { bytes: 0, page: 0, thumbnails: 0, full_images: 0 };
  const { server, url } = await staticServer(dir, counters);
  try {
    const { imageMb, thumbKb } = await galleryOutput(dir, items);
    const trials: PaintTimes[] = [];
    let loaded = { ...counters };
    for (let trial = 0; trial < TRIALS; trial++) {
      Object.assign(counters, { bytes: 0, page: 0, thumbnails: 0, full_images: 0 });
      trials.push(await firstScreen(browser, `${url}${TIMED_PAGE}`));
      if (trial === 0) loaded = { ...counters };
    }
    const fileTrials: PaintTimes[] = [];
    for (let trial = 0; trial < TRIALS; trial++)
      fileTrials.push(await firstScreen(browser, pathToFileURL(join(dir, TIMED_PAGE)).href));
    const painted = trials.map((times) => Math.round(times.last_painted_ms));
    return {
      items,
      image_mean_mb: round(imageMb, 2),
      thumbnail_mean_kb: round(thumbKb, 1),
      page_mb: round(statSync(join(dir, GALLERY_FILE)).size / 1e6, 2),
      viewport: VIEWPORT,
      first_screen_ms: median(painted),
      first_screen_trials_ms: painted,
      first_screen_thumbnails: Math.min(...trials.map((times) => times.thumbnails)),
      first_screen_in_view: Math.max(...trials.map((times) => times.in_view)),
      parsed_ms: Math.round(median(trials.map((times) => times.parsed_ms))),
      loaded_kb: Math.round(loaded.bytes / 1024),
      loaded_requests: { page: loaded.page, thumbnails: loaded.thumbnails, full_images: loaded.full_images },
      file_first_screen_ms: Math.round(median(fileTrials.map((times) => times.last_painted_ms))),
      file_parsed_ms: Math.round(median(fileTrials.map((times) => times.parsed_ms))),
    };
  } finally {
    server.close();
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
