// The gallery by product (issue #40) at catalog size, in headless Chromium: 10,000 products x 3
// variants (a tenth without the lifestyle shot a `where:` left out, 1% failed, 2% flagged by the
// checks) with real-size 1K PNGs and the thumbnails the checks make (bench/gallery-load.ts), the
// page written by the report's own writeGallery. Measured for the product layout and, as the
// baseline, the same 29,000 items as today's item gallery (one card each): first screen painted,
// a fast scroll (a viewport a frame) with its frame times and long tasks, a jump to the end, the
// filters and the search until the next frame, and memory (JS heap after a GC, DOM nodes, the
// page's renderer process RSS and its peak).
//
//   npm run build && node dist/bench/gallery-products.js [--products 10000] [--json out.json]
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import type { ItemStatus } from '../common/types.js';
import { writeGallery, type GalleryEntry } from '../report/gallery.js';
import type { ReportLine } from '../report/report-line.js';
import { launchChromium } from './browser.js';
import { round } from './figures.js';
import {
  distinctImages,
  linkImage,
  meanSizes,
  median,
  staticServer,
  TRIALS,
  VIEWPORT,
  type Counters,
  type PaintTimes,
  type DistinctImage,
} from './gallery-load.js';
import { renderTable } from './report.js';

type VariantLine = ReportLine & { product: string; variant: string; variables: Record<string, string> };

const VARIANTS = ['studio', 'lifestyle', 'detail'];
const STYLE: Record<string, string> = {
  studio: 'on a white background, soft studio light',
  lifestyle: 'in a bright living room, natural window light',
  detail: 'close-up of the material and stitching',
};
const COLOURS = ['oak', 'walnut', 'sage green', 'rust', 'ivory', 'charcoal'];
const MATERIALS = ['linen', 'velvet', 'leather', 'wool', 'rattan'];
const SCROLL_FRAMES = 300;
const SEARCHES = ['sku-0777', 'walnut', 'colour=walnut material=linen', ''];

/**
 * After the load event: when every thumbnail in the viewport had been painted (Element Timing),
 * on the page's own clock. gallery-load.ts's PAINT_TIMES takes the first report of painted
 * thumbnails, which for a page whose script makes its images can come before all are painted.
 */
const FIRST_SCREEN = `new Promise((resolve, reject) => {
  setTimeout(() => reject(new Error('the thumbnails in view were not all painted in 30 s')), 30000);
  const painted = new Map();
  let inView = null;
  const settle = () => {
    if (inView === null || inView.length === 0 || !inView.every((img) => painted.has(img))) return;
    const nav = performance.getEntriesByType('navigation')[0];
    resolve({
      thumbnails: inView.length,
      in_view: inView.length,
      last_painted_ms: Math.max(...inView.map((img) => painted.get(img))),
      parsed_ms: nav.domContentLoadedEventEnd,
    });
  };
  // One IntersectionObserver callback for all images (a layout per image would take minutes at 29,000).
  const observer = new IntersectionObserver((entries) => {
    observer.disconnect();
    inView = entries.filter((entry) => entry.isIntersecting).map((entry) => entry.target);
    settle();
  });
  for (const img of document.images) observer.observe(img);
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      if (entry.identifier === 'thumbnail' && entry.element) painted.set(entry.element, entry.renderTime || entry.loadTime);
    settle();
  }).observe({ type: 'element', buffered: true });
})`;

/** The first screen in a fresh browser context: every thumbnail in view painted, from navigation. */
async function firstScreen(browser: Browser, url: string): Promise<PaintTimes> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  try {
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load', timeout: 120_000 });
    return (await page.evaluate(FIRST_SCREEN)) as PaintTimes;
  } finally {
    await context.close();
  }
}

/**
 * Until the frame after the change begins: the change's own frame (script, style, layout, paint)
 * is done by then; the figure includes the wait for the frame (up to ~17 ms at 60 Hz).
 */
const NEXT_FRAME = `() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))`;

/** Scrolls `px` a frame for SCROLL_FRAMES frames from the top: every frame's interval, the long tasks. */
const scrollScript = (px: string): string => `(async () => {
  scrollTo(0, 0);
  const longTasks = [];
  const observer = new PerformanceObserver((list) => longTasks.push(...list.getEntries().map((e) => e.duration)));
  observer.observe({ type: 'longtask' });
  const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  const frames = [];
  let last = await frame();
  for (let i = 0; i < ${SCROLL_FRAMES}; i++) {
    scrollBy(0, ${px});
    const now = await frame();
    frames.push(now - last);
    last = now;
  }
  observer.disconnect();
  return { frames, longTasks, scrolled: scrollY };
})()`;

const timed = (action: string): string => `(async () => {
  const nextFrame = ${NEXT_FRAME};
  const start = performance.now();
  ${action};
  await nextFrame();
  return { ms: performance.now() - start, shown: document.getElementById('shown').textContent };
})()`;

interface Timed {
  ms: number;
  shown: string;
}

interface ScrollFigures {
  frames: number;
  px: number;
  mean_frame_ms: number;
  p95_frame_ms: number;
  max_frame_ms: number;
  long_tasks: number;
  long_task_ms: number;
}

interface ScrollRun {
  frames: number[];
  longTasks: number[];
  scrolled: number;
}

function scrollFigures(run: ScrollRun): ScrollFigures {
  const frames = [...run.frames].sort((a, b) => a - b);
  return {
    frames: frames.length,
    px: Math.round(run.scrolled),
    mean_frame_ms: round(frames.reduce((sum, ms) => sum + ms, 0) / frames.length, 1),
    p95_frame_ms: round(frames[Math.floor(frames.length * 0.95)]!, 1),
    max_frame_ms: round(frames.at(-1)!, 1),
    long_tasks: run.longTasks.length,
    long_task_ms: Math.round(run.longTasks.reduce((sum, ms) => sum + ms, 0)),
  };
}

export interface LayoutFigures {
  layout: 'products' | 'items';
  page_mb: number;
  first_screen_ms: number;
  first_screen_trials_ms: number[];
  first_screen_thumbnails: number;
  parsed_ms: number;
  loaded_kb: number;
  loaded_thumbnails: number;
  loaded_full_images: number;
  /** At a wheel's pace (120 px a frame, 7,200 px/s at 60 Hz) and a fling (a viewport a frame). */
  scroll: Record<'wheel' | 'fling', ScrollFigures>;
  jump_to_end_ms: number;
  filter: Record<string, Timed>;
  search: Record<string, Timed>;
  memory: { js_heap_mb: number; elements: number; renderer_rss_mb: number; renderer_peak_mb: number };
}

/** The outputs of a finished run of `products` x VARIANTS: images linked, lines as the report has them. */
async function productOutput(
  dir: string,
  products: number,
): Promise<{ entries: GalleryEntry[]; distinct: DistinctImage[] }> {
  const distinct = await distinctImages(dir);
  const entries: GalleryEntry[] = [];
  for (let k = 0; k < products; k++) {
    const product = `sku-${String(k).padStart(5, '0')}`;
    const variables = {
      name: `${['Armchair', 'Sofa', 'Ottoman', 'Bench'][k % 4]} ${k}`,
      colour: COLOURS[k % COLOURS.length]!,
      material: MATERIALS[Math.floor(k / 7) % MATERIALS.length]!,
      category: ['chair', 'sofa', 'ottoman', 'bench'][k % 4]!,
    };
    for (const [v, variant] of VARIANTS.entries()) {
      if (variant === 'lifestyle' && k % 10 === 0) continue;
      const id = `${product}-${variant}`;
      const status: ItemStatus = (k * 7 + v) % 100 === 3 ? 'failed' : 'completed';
      const { size, image } = distinct[(k * 3 + v) % distinct.length]!;
      const stored = status === 'completed' ? [linkImage(dir, image, `images/${id}.png`)] : [];
      if (stored[0] && (k * 13 + v) % 50 === 7)
        stored[0] = {
          ...stored[0],
          checks: [{ check: 'blank', level: 'warn', message: 'mostly one colour' }],
        };
      const line: VariantLine = {
        id,
        product,
        variant,
        variables,
        status,
        task_id: `task_${k}_${v}`,
        attempts: 1,
        credits_cost: status === 'completed' ? 1 : 0,
        images: stored,
        error:
          status === 'failed'
            ? { type: 'generation_error', code: 'content_policy', message: 'refused' }
            : null,
      };
      const prompt = `A ${variables.colour} ${variables.material} ${variables.name.toLowerCase()}, ${STYLE[variant]}, 35 mm`;
      entries.push({ line, item: { id, prompt, model: 'image-model-1', size, resolution: '1K', n: 1 } });
    }
  }
  return { entries, distinct };
}

/** RSS and its peak of the renderer processes this process's Chromium runs, the largest (the page's). */
function rendererMemory(): { rss: number; peak: number } {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  let best = { rss: 0, peak: 0 };
  const queue = [...(children.get(process.pid) ?? [])];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    queue.push(...(children.get(pid) ?? []));
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer')) continue;
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      if (kb('VmRSS') > best.rss * 1024) best = { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
    } catch {
      // gone meanwhile
    }
  }
  return best;
}

async function interactions(browser: Browser, url: string, layout: LayoutFigures['layout']) {
  const context = await browser.newContext({ viewport: VIEWPORT });
  try {
    const page: Page = await context.newPage();
    await page.goto(url, { waitUntil: 'load', timeout: 120_000 });
    const wheel = (await page.evaluate(scrollScript('120'))) as ScrollRun;
    const fling = (await page.evaluate(scrollScript('innerHeight'))) as ScrollRun;
    const jump = (await page.evaluate(timed('scrollTo(0, document.documentElement.scrollHeight)'))) as Timed;
    await page.evaluate('scrollTo(0, 0)');
    const filter: Record<string, Timed> = {};
    for (const name of ['failed', ...(layout === 'products' ? ['checks'] : []), 'all'])
      filter[name] = (await page.evaluate(
        timed(`document.querySelector('.filters button[data-filter="${name}"]').click()`),
      )) as Timed;
    const search: Record<string, Timed> = {};
    for (const query of SEARCHES)
      search[query === '' ? '(cleared)' : query] = (await page.evaluate(
        timed(
          `const box = document.getElementById('search'); box.value = ${JSON.stringify(query)}; box.dispatchEvent(new Event('input'))`,
        ),
      )) as Timed;
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    await cdp.send('HeapProfiler.collectGarbage');
    const { metrics } = await cdp.send('Performance.getMetrics');
    const metric = (name: string): number => metrics.find((m) => m.name === name)?.value ?? 0;
    const renderer = rendererMemory();
    return {
      scroll: { wheel: scrollFigures(wheel), fling: scrollFigures(fling) },
      jump_to_end_ms: round(jump.ms, 1),
      filter: Object.fromEntries(Object.entries(filter).map(([k, t]) => [k, { ...t, ms: round(t.ms, 1) }])),
      search: Object.fromEntries(Object.entries(search).map(([k, t]) => [k, { ...t, ms: round(t.ms, 1) }])),
      memory: {
        js_heap_mb: round(metric('JSHeapUsedSize') / 1e6, 1),
        elements: Number(await page.evaluate('document.getElementsByTagName("*").length')),
        renderer_rss_mb: Math.round(renderer.rss),
        renderer_peak_mb: Math.round(renderer.peak),
      },
    };
  } finally {
    await context.close();
  }
}

async function measure(
  browser: Browser,
  dir: string,
  layout: LayoutFigures['layout'],
  page: string,
  timedPage: string,
): Promise<LayoutFigures> {
  const counters: Counters = { bytes: 0, page: 0, thumbnails: 0, full_images: 0 };
  const { server, url } = await staticServer(dir, counters, timedPage, page);
  try {
    const trials = [];
    let loaded = { ...counters };
    for (let trial = 0; trial < TRIALS; trial++) {
      Object.assign(counters, { bytes: 0, page: 0, thumbnails: 0, full_images: 0 });
      trials.push(await firstScreen(browser, `${url}${timedPage}`));
      if (trial === 0) loaded = { ...counters };
    }
    const painted = trials.map((times) => Math.round(times.last_painted_ms));
    return {
      layout,
      page_mb: round(statSync(join(dir, page)).size / 1e6, 2),
      first_screen_ms: median(painted),
      first_screen_trials_ms: painted,
      first_screen_thumbnails: Math.min(...trials.map((times) => times.thumbnails)),
      parsed_ms: Math.round(median(trials.map((times) => times.parsed_ms))),
      loaded_kb: Math.round(loaded.bytes / 1024),
      loaded_thumbnails: loaded.thumbnails,
      loaded_full_images: loaded.full_images,
      ...(await interactions(browser, `${url}${timedPage}`, layout)),
    };
  } finally {
    server.close();
  }
}

export async function productGalleryBenchmark(products: number) {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-gallery-products-'));
  const browser = await launchChromium();
  try {
    const { entries, distinct } = await productOutput(dir, products);
    const summary = {
      manifest: 'bench-gallery-products',
      run_id: 'pixelmill/bench-gallery-products',
      items: entries.length,
      counts: { completed: 0, failed: 0, cancelled: 0, expired: 0, skipped: 0 },
      images: 0,
      credits_charged: 0,
      started_at: '2026-11-26T00:00:00.000Z',
      finished_at: '2026-11-26T03:00:00.000Z',
      emulated: true,
    };
    for (const { line } of entries) {
      summary.counts[line.status] += 1;
      summary.images += line.images.length;
      summary.credits_charged += line.credits_cost;
    }
    await writeGallery(join(dir, 'products.html'), { ...summary, variants: VARIANTS }, entries);
    // The baseline: the same items without their product, which today's gallery shows as cards.
    const items = entries.map(({ item, line }) => {
      const { product: _product, variant: _variant, variables: _variables, ...plain } = line as VariantLine;
      return { item, line: plain };
    });
    await writeGallery(join(dir, 'items.html'), summary, items);
    const page = readFileSync(join(dir, 'items.html'), 'utf8');
    writeFileSync(
      join(dir, 'items-timed.html'),
      page.replaceAll('loading="lazy"', 'loading="lazy" elementtiming="thumbnail"'),
    );
    const { imageMb, thumbKb } = meanSizes(dir, distinct);
    return {
      benchmark: 'gallery-products',
      date: new Date().toISOString(),
      products,
      variants: VARIANTS.length,
      items: entries.length,
      image_mean_mb: round(imageMb, 2),
      thumbnail_mean_kb: round(thumbKb, 1),
      viewport: VIEWPORT,
      layouts: [
        await measure(browser, dir, 'products', 'products.html', 'products.html'),
        await measure(browser, dir, 'items', 'items.html', 'items-timed.html'),
      ],
    };
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function table(layouts: LayoutFigures[]): string {
  const row = (label: string, value: (figures: LayoutFigures) => string | number): (string | number)[] => [
    label,
    ...layouts.map(value),
  ];
  const timedCell = (t: Timed | undefined): string => (t ? `${t.ms} (${t.shown})` : '-');
  const keys = (pick: (f: LayoutFigures) => Record<string, Timed>) => [
    ...new Set(layouts.flatMap((f) => Object.keys(pick(f)))),
  ];
  return renderTable([
    row('layout', (f) => f.layout),
    row('page MB', (f) => f.page_mb),
    row(
      'first screen painted, ms (median; trials)',
      (f) => `${f.first_screen_ms}; ${f.first_screen_trials_ms.join(', ')}`,
    ),
    row('  thumbnails painted', (f) => f.first_screen_thumbnails),
    row('whole page parsed, ms', (f) => f.parsed_ms),
    row(
      'loaded until the load event, KB (thumbnails, full)',
      (f) => `${f.loaded_kb} (${f.loaded_thumbnails}, ${f.loaded_full_images})`,
    ),
    ...(['wheel', 'fling'] as const).flatMap((speed) => [
      row(`scroll, ${speed}: frames, px`, (f) => `${f.scroll[speed].frames}, ${f.scroll[speed].px}`),
      row(
        '  frame ms: mean, p95, max',
        (f) =>
          `${f.scroll[speed].mean_frame_ms}, ${f.scroll[speed].p95_frame_ms}, ${f.scroll[speed].max_frame_ms}`,
      ),
      row(
        '  long tasks (ms in all)',
        (f) => `${f.scroll[speed].long_tasks} (${f.scroll[speed].long_task_ms})`,
      ),
    ]),
    row('jump to the end, ms', (f) => f.jump_to_end_ms),
    ...keys((f) => f.filter).map((k) => row(`filter ${k}, ms`, (f) => timedCell(f.filter[k]))),
    ...keys((f) => f.search).map((k) => row(`search "${k}", ms`, (f) => timedCell(f.search[k]))),
    row('JS heap after GC, MB', (f) => f.memory.js_heap_mb),
    row('elements in the document', (f) => f.memory.elements),
    row('renderer RSS, MB (peak)', (f) => `${f.memory.renderer_rss_mb} (${f.memory.renderer_peak_mb})`),
  ]);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { products: { type: 'string', default: '10000' }, json: { type: 'string' } },
  });
  const result = await productGalleryBenchmark(Number(values.products));
  console.log(
    `${result.products} products x ${result.variants} variants = ${result.items} items; 1K PNG mean ${result.image_mean_mb} MB, thumbnail ${result.thumbnail_mean_kb} KB; viewport ${VIEWPORT.width}x${VIEWPORT.height}`,
  );
  console.log(table(result.layouts));
  if (values.json) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
}

await main();
