// The run's gallery, `<output>/index.html`: a contact sheet of every item
// (thumbnails, id, prompt, status, size and resolution, credits, error), with status filters and
// a search, written next to report.jsonl from the same data. It is generated as a stream of small
// chunks and refers to images by relative path only (lazily loaded), so neither writing nor
// opening a 10,000-item page holds the images in memory, and it works offline from file://.
import type { ItemStatus } from '../common/types.js';
import { nounFor, plural } from '../common/words.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { writeFileAtomic } from '../runstate/index.js';
import {
  ALWAYS_OFFERED,
  escapeHtml,
  GALLERY_CSP,
  GALLERY_CSS,
  GALLERY_SCRIPT,
  imageHref,
  STATUSES,
} from './gallery-page.js';
import type { ReportLine } from './report-line.js';

export const GALLERY_FILE = 'index.html';

/** Thumbnails shown per card; further images of the item are listed as links. */
const MAX_THUMBNAILS = 4;

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
}

/** One card: the item's report line and its planned parameters (prompt, size, resolution...). */
export interface GalleryEntry {
  line: ReportLine;
  item: PlannedItem;
}

/** Writes the gallery of a run to `file`, atomically (temp file and rename). */
export async function writeGallery(
  file: string,
  summary: GallerySummary,
  entries: Iterable<GalleryEntry>,
): Promise<void> {
  await writeFileAtomic(file, galleryHtml(summary, entries));
}

/** The page, chunk by chunk: one chunk per card, so memory does not grow with the run. */
export function* galleryHtml(summary: GallerySummary, entries: Iterable<GalleryEntry>): Generator<string> {
  yield pageHead(summary);
  for (const entry of entries) yield card(entry);
  yield pageTail();
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

function filterButton(filter: string, label: string, count: number): string {
  return `<button type="button" data-filter="${filter}" aria-pressed="false">${label}<span class="count">${count}</span></button>`;
}

function pageHead(summary: GallerySummary): string {
  const name = escapeHtml(summary.manifest);
  const buttons = [filterButton('all', 'All', summary.items)];
  for (const status of STATUSES) {
    const count = summary.counts[status];
    const label = `${status.charAt(0).toUpperCase()}${status.slice(1)}`;
    if (count > 0 || ALWAYS_OFFERED.has(status)) buttons.push(filterButton(status, label, count));
  }
  const run = [
    `<b>${summary.items}</b> ${nounFor(summary.items, 'item')}`,
    `<b>${summary.images}</b> ${nounFor(summary.images, 'image')}`,
    `<b>${summary.credits_charged}</b> ${nounFor(summary.credits_charged, 'credit')}`,
    `run ${escapeHtml(summary.run_id)}`,
    escapeHtml(runTime(summary.started_at, summary.finished_at)),
    ...(summary.emulated ? ['emulated API'] : []),
  ].join(' · ');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${GALLERY_CSP}">
<meta name="generator" content="pixelmill">
<title>${name} · pixelmill gallery</title>
<style>${GALLERY_CSS}</style>
</head>
<body data-filter="all" data-run="${escapeHtml(summary.run_id)}">
<header>
<h1>${name}</h1>
<p class="run">${run}</p>
<nav class="filters" aria-label="Filter items">
${buttons.join('\n')}
<input type="search" id="search" placeholder="Search id or prompt" aria-label="Search id or prompt">
<output id="shown">showing ${summary.items} of ${summary.items}</output>
</nav>
<div id="review" hidden>
<output id="picked">0 selected</output>
<code id="redo"></code>
<button type="button" id="copy-redo">Copy command</button>
<a id="ids-file" download="redo-ids.txt" href="#">Download ids</a>
<button type="button" id="clear-picks">Clear</button>
</div>
</header>
<p id="empty" hidden></p>
<main>
`;
}

function thumbnails(line: ReportLine, n: number): string {
  const id = escapeHtml(line.id);
  if (line.images.length === 0) return `<div class="thumbs noimage">no image</div>`;
  const shown = line.images.slice(0, MAX_THUMBNAILS);
  const links = shown.map((image, index) => {
    const href = imageHref(image.path);
    // The thumbnail when the run made one: a 10,000-image sheet loads KBs per card, not MBs.
    const src = image.thumbnail !== undefined ? imageHref(image.thumbnail) : href;
    const alt = `${id}, image ${index + 1} of ${n}`;
    return `<a class="full" href="${href}"><img src="${src}" alt="${alt}" loading="lazy" decoding="async" width="230" height="170"></a>`;
  });
  return `<div class="thumbs${shown.length > 1 ? ' multi' : ''}">${links.join('')}</div>`;
}

function moreImages(line: ReportLine): string {
  if (line.images.length <= MAX_THUMBNAILS) return '';
  const links = line.images
    .slice(MAX_THUMBNAILS)
    .map((image, offset) => `<a href="${imageHref(image.path)}">#${MAX_THUMBNAILS + offset + 1}</a>`);
  return `<p class="more">more: ${links.join(' ')}</p>`;
}

function card({ line, item }: GalleryEntry): string {
  const bytes = line.images.reduce((sum, image) => sum + image.bytes, 0);
  const facts = [
    escapeHtml(item.size),
    escapeHtml(item.resolution),
    `${line.images.length}/${plural(item.n, 'image')}`,
    plural(line.credits_cost, 'credit'),
    ...(bytes > 0 ? [formatBytes(bytes)] : []),
  ]
    .map((fact) => `<span>${fact}</span>`)
    .join(' · ');
  const details = [
    `model ${item.model}`,
    `task ${line.task_id ?? 'none'}`,
    plural(line.attempts, 'attempt'),
  ].join(' · ');
  const error =
    line.error === null
      ? ''
      : `<p class="error">${escapeHtml(`${line.error.type}/${line.error.code}: ${line.error.message}`)}</p>`;
  const findings = line.images.flatMap((image, k) =>
    (image.checks ?? []).map(
      (finding) => `image ${k + 1}: ${finding.check} ${finding.level}: ${finding.message}`,
    ),
  );
  const checks = findings.length === 0 ? '' : `<p class="checks">${escapeHtml(findings.join('; '))}</p>`;
  const prompt = escapeHtml(item.prompt);
  return `<article class="card" data-status="${escapeHtml(line.status)}" data-id="${escapeHtml(line.id)}">
${thumbnails(line, item.n)}<div class="info">
<div class="head"><input type="checkbox" class="pick" aria-label="Select ${escapeHtml(line.id)} to generate again"><h2 class="id">${escapeHtml(line.id)}</h2><span class="badge ${escapeHtml(line.status)}">${escapeHtml(line.status)}</span></div>
<p class="prompt" title="${prompt}">${prompt}</p>
<p class="facts" title="${escapeHtml(details)}">${facts}</p>
${error}${checks}${moreImages(line)}</div>
</article>
`;
}

function pageTail(): string {
  return `</main>
<dialog id="viewer" aria-label="Image">
<img alt="">
<p><span class="caption"></span><span><button type="button" class="prev" aria-label="Previous image">&larr;</button> <button type="button" class="next" aria-label="Next image">&rarr;</button> <label><input type="checkbox" class="viewer-pick"> select (x)</label> <a class="original" href="">open file</a> <button type="button" class="close">Close</button></span></p>
</dialog>
<script>${GALLERY_SCRIPT}</script>
</body>
</html>
`;
}
