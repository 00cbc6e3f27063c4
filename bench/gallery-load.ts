// The gallery of a 10,000-image run in headless Chromium: how long until the first screen of
// thumbnails is drawn, and how many bytes that screen loads. The output is what a run leaves:
// real-size photo-like 1K PNGs (a few dozen distinct ones, hard-linked under every item's path so
// the disk holds a few dozen), each one's thumbnail made by the checks (checkStored), and the
// page written by the report's own writeGallery. It is served over loopback by a static server
// that counts bytes (as from a bucket or a shared folder), and opened from file:// too.
import { createReadStream, linkSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
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
  /** Over loopback HTTP, one fresh browser context per trial: the median, then every trial. */
  first_screen_ms: number;
  first_screen_trials_ms: number[];
  first_screen_kb: number;
  first_screen_requests: { page: number; thumbnails: number; full_images: number };
  /** Opened from file://, as a user opens it from the output folder. */
  file_first_screen_ms: number;
}

const VIEWPORT = { width: 1440, height: 900 };
const TRIALS = 3;
/** Distinct images: the 1K sizes of the four common aspect ratios. */
const SIZES = [
  { size: '1:1', width: 1024, height: 1024 },
  { size: '16:9', width: 1024, height: 576 },
  { size: '2:3', width: 683, height: 1024 },
  { size: '4:5', width: 819, height: 1024 },
];
const DISTINCT_PER_SIZE = 8;

/**
 * True (with the page's clock) once the page has cards and every thumbnail in the viewport has
 * loaded and decoded, a frame after: the first screen as drawn.
 */
const FIRST_SCREEN_DRAWN = `(() => {
  const inView = [...document.images].filter((img) => {
    const box = img.getBoundingClientRect();
    return box.bottom > 0 && box.top < innerHeight && box.right > 0 && box.left < innerWidth && box.width > 0;
  });
  if (inView.length < 4 || inView.some((img) => !img.complete || img.naturalWidth === 0)) return false;
  return performance.now();
})()`;

interface Counters {
  bytes: number;
  page: number;
  thumbnails: number;
  full_images: number;
}

function staticServer(root: string, counters: Counters): Promise<{ server: Server; url: string }> {
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
    counters.bytes += size;
    if (path.startsWith('.thumbnails/')) counters.thumbnails++;
    else if (path === GALLERY_FILE) counters.page++;
    else counters.full_images++;
    response.writeHead(200, { 'content-type': contentTypeFor(file), 'content-length': size });
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

/** The output of a finished `items`-item run: images, thumbnails and the gallery page. */
async function galleryOutput(dir: string, items: number): Promise<{ imageMb: number; thumbKb: number }> {
  const store = new LocalResultStore(dir);
  const distinct: { size: string; image: ReportImage }[] = [];
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
  const entries: GalleryEntry[] = [];
  for (let k = 0; k < items; k++) {
    const id = `sku-${String(k).padStart(5, '0')}`;
    const { size, image } = distinct[k % distinct.length]!;
    const path = `images/${id}.png`;
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    mkdirSync(dirname(join(dir, thumbnailPath(path))), { recursive: true });
    linkSync(join(dir, image.path), join(dir, path));
    linkSync(join(dir, image.thumbnail!), join(dir, thumbnailPath(path)));
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
        images: [{ ...image, path, thumbnail: thumbnailPath(path) }],
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
  const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
  return {
    imageMb: mean(distinct.map(({ image }) => image.bytes)) / 1e6,
    thumbKb: mean(distinct.map(({ image }) => statSync(join(dir, image.thumbnail!)).size)) / 1024,
  };
}

/** Milliseconds from navigation to the first screen drawn, on the page's own clock. */
async function firstScreen(browser: Browser, url: string): Promise<number> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  try {
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'commit' });
    const drawn = await page.waitForFunction(FIRST_SCREEN_DRAWN, undefined, {
      polling: 'raf',
      timeout: 60_000,
    });
    return Number(await drawn.jsonValue());
  } finally {
    await context.close();
  }
}

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function galleryBenchmark(items: number): Promise<GalleryFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-gallery-'));
  const browser = await launchChromium();
  const counters: Counters = { bytes: 0, page: 0, thumbnails: 0, full_images: 0 };
  const { server, url } = await staticServer(dir, counters);
  try {
    const { imageMb, thumbKb } = await galleryOutput(dir, items);
    const trials: number[] = [];
    let firstKb = 0;
    let requests = { page: 0, thumbnails: 0, full_images: 0 };
    for (let trial = 0; trial < TRIALS; trial++) {
      Object.assign(counters, { bytes: 0, page: 0, thumbnails: 0, full_images: 0 });
      trials.push(await firstScreen(browser, `${url}${GALLERY_FILE}`));
      if (trial === 0) {
        firstKb = counters.bytes / 1024;
        requests = {
          page: counters.page,
          thumbnails: counters.thumbnails,
          full_images: counters.full_images,
        };
      }
    }
    const fileTrials: number[] = [];
    for (let trial = 0; trial < TRIALS; trial++)
      fileTrials.push(await firstScreen(browser, pathToFileURL(join(dir, GALLERY_FILE)).href));
    return {
      items,
      image_mean_mb: round(imageMb, 2),
      thumbnail_mean_kb: round(thumbKb, 1),
      page_mb: round(statSync(join(dir, GALLERY_FILE)).size / 1e6, 2),
      viewport: VIEWPORT,
      first_screen_ms: Math.round(median(trials)),
      first_screen_trials_ms: trials.map((ms) => Math.round(ms)),
      first_screen_kb: Math.round(firstKb),
      first_screen_requests: requests,
      file_first_screen_ms: Math.round(median(fileTrials)),
    };
  } finally {
    server.close();
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
