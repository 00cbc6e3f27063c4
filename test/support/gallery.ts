// What the gallery tests share: a run's summary made from its entries, and the page opened in the
// browser with its script errors and CSP violations collected.
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import type { ItemStatus } from '../../common/types.js';
import type { GalleryEntry, GallerySummary } from '../../report/gallery.js';

/** The summary of a run named `manifest` whose report is `entries`, emulated, over `[startedAt, finishedAt]`. */
export function summaryOf(
  manifest: string,
  entries: readonly GalleryEntry[],
  counts: Record<ItemStatus, number>,
  [startedAt, finishedAt]: readonly [string, string],
): GallerySummary {
  return {
    manifest,
    run_id: `pixelmill/${manifest}`,
    items: entries.length,
    counts,
    images: entries.reduce((sum, { line }) => sum + line.images.length, 0),
    credits_charged: entries.reduce((sum, { line }) => sum + line.credits_cost, 0),
    started_at: startedAt,
    finished_at: finishedAt,
    emulated: true,
  };
}

/** Opens the page from file://, collecting script errors and CSP violations (a test fails on any). */
export async function openGallery(
  browser: Browser,
  file: string,
  hash = '',
): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(pathToFileURL(file).href + hash);
  return { page, problems };
}
