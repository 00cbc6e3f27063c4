// What the gallery tests share: a run's summary made from its entries, a report written by the
// report activity, and the page opened in the browser with its script errors and CSP violations collected.
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { createActivities } from '../../activities/index.js';
import type { ItemStatus } from '../../common/types.js';
import type { GalleryEntry, GallerySummary } from '../../report/gallery.js';
import { frozenPlan } from './plan.js';

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

/**
 * The report the run's own activity writes for the manifest `file`, its second item failed (task_B,
 * 2 attempts) and the rest never finished, at `now`.
 */
export async function reportWithOneFailure(
  file: string,
  { runId, now, startedAt }: { runId: string; now: number; startedAt: string },
): Promise<void> {
  const activities = createActivities({ now: () => now });
  const { plan } = await activities.prepareRun({ plan: await frozenPlan(file) });
  await activities.recordOutcomes({
    plan,
    shard: 0,
    outcomes: [
      {
        index: 1,
        status: 'failed',
        taskId: 'task_B',
        attempts: 2,
        creditsCost: 0,
        error: { type: 'generation_error', code: 'generation_failed', message: 'it broke' },
      },
    ],
  });
  await activities.writeReport({
    plan,
    runId,
    emulated: true,
    startedAt,
    apiCalls: { submit: 1, lookup: 1, get: 1 },
  });
}
