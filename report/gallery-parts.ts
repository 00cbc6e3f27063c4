// Pieces both gallery layouts share (report/gallery.ts, one card per item; report/gallery-products.ts,
// one row per product): the run's facts in the header, the filter buttons, the review bar that
// writes the redo command, the image viewer, and the text an item's card or cell shows.
import type { ItemStatus } from '../common/types.js';
import { nounFor, plural } from '../common/words.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { ALWAYS_OFFERED, escapeHtml, STATUSES } from './gallery-page.js';
import type { ReportLine } from './report-line.js';

/** The run-level facts in the page header: the fields of summary.json it shows. */
export interface GallerySummary {
  manifest: string;
  run_id: string;
  items: number;
  counts: Record<ItemStatus, number>;
  images: number;
  credits_charged: number;
  started_at: string;
  finished_at: string;
  emulated: boolean;
  /**
   * The manifest's variants in its order, when the caller knows them: the product gallery's
   * columns. Without it the columns follow the order the items come in (gallery-variant-order.ts).
   */
  variants?: readonly string[];
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** "2026-05-01 11:00:00 UTC, 4m 12s"; the raw strings if they are not ISO timestamps. */
function runTime(startedAt: string, finishedAt: string): string {
  const start = Date.parse(startedAt);
  const end = Date.parse(finishedAt);
  if (Number.isNaN(start) || Number.isNaN(end)) return `${startedAt} to ${finishedAt}`;
  const seconds = Math.max(0, Math.round((end - start) / 1000));
  const duration = [
    seconds >= 3600 ? `${Math.floor(seconds / 3600)}h` : '',
    seconds >= 60 ? `${Math.floor((seconds % 3600) / 60)}m` : '',
    `${seconds % 60}s`,
  ]
    .filter(Boolean)
    .join(' ');
  return `${new Date(start).toISOString().slice(0, 19).replace('T', ' ')} UTC, ${duration}`;
}

export function filterButton(filter: string, label: string, count: number): string {
  return `<button type="button" data-filter="${filter}" aria-pressed="false">${label}<span class="count">${count}</span></button>`;
}

/** The toolbar's "All" button, then one per status the run has (completed and failed always). */
export function statusButtons(summary: Pick<GallerySummary, 'items' | 'counts'>): string[] {
  const buttons = [filterButton('all', 'All', summary.items)];
  for (const status of STATUSES) {
    const count = summary.counts[status];
    const label = `${status.charAt(0).toUpperCase()}${status.slice(1)}`;
    if (count > 0 || ALWAYS_OFFERED.has(status)) buttons.push(filterButton(status, label, count));
  }
  return buttons;
}

/** The header's line of run facts: items, images, credits, run id, when, emulated. */
export function runFacts(summary: GallerySummary, lead: string[] = []): string {
  return [
    ...lead,
    `<b>${summary.items}</b> ${nounFor(summary.items, 'item')}`,
    `<b>${summary.images}</b> ${nounFor(summary.images, 'image')}`,
    `<b>${summary.credits_charged}</b> ${nounFor(summary.credits_charged, 'credit')}`,
    `run ${escapeHtml(summary.run_id)}`,
    escapeHtml(runTime(summary.started_at, summary.finished_at)),
    ...(summary.emulated ? ['emulated API'] : []),
  ].join(' · ');
}

/** The bar a selection opens: the redo command for the picked items, and their ids as a file. */
export const REVIEW_BAR = `<div id="review" hidden>
<output id="picked">0 selected</output>
<code id="redo"></code>
<button type="button" id="copy-redo">Copy command</button>
<a id="ids-file" download="redo-ids.txt" href="#">Download ids</a>
<button type="button" id="clear-picks">Clear</button>
</div>`;

/** The full-size image viewer (a dialog), stepped with the arrow keys. */
export const VIEWER_DIALOG = `<dialog id="viewer" aria-label="Image">
<img alt="">
<p><span class="caption"></span><span><button type="button" class="prev" aria-label="Previous image">&larr;</button> <button type="button" class="next" aria-label="Next image">&rarr;</button> <label><input type="checkbox" class="viewer-pick"> select (x)</label> <a class="original" href="">open file</a> <button type="button" class="close">Close</button></span></p>
</dialog>`;

/** "16:9 · 2K · 1/1 image · 2 credits · 1.2 MB", each fact as it reads (not escaped). */
export function itemFacts(line: ReportLine, item: PlannedItem): string[] {
  const bytes = line.images.reduce((sum, image) => sum + image.bytes, 0);
  return [
    item.size,
    item.resolution,
    `${line.images.length}/${plural(item.n, 'image')}`,
    plural(line.credits_cost, 'credit'),
    ...(bytes > 0 ? [formatBytes(bytes)] : []),
  ];
}

/** "model m · task t · 2 attempts". */
export function itemDetails(line: ReportLine, item: PlannedItem): string {
  return [`model ${item.model}`, `task ${line.task_id ?? 'none'}`, plural(line.attempts, 'attempt')].join(
    ' · ',
  );
}

/** "type/code: message", or '' when the item has no error. */
export function errorText(line: ReportLine): string {
  return line.error === null ? '' : `${line.error.type}/${line.error.code}: ${line.error.message}`;
}

/** What the checks found in the item's images: "image 1: aspect_ratio error: ...; ...", or ''. */
export function checkFindings(line: ReportLine): string {
  return line.images
    .flatMap((image, k) =>
      (image.checks ?? []).map(
        (finding) => `image ${k + 1}: ${finding.check} ${finding.level}: ${finding.message}`,
      ),
    )
    .join('; ');
}
