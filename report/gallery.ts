// The run's gallery, `<output>/index.html`: a contact sheet of every item (thumbnails, id, prompt,
// status, size and resolution, credits, error), with status filters and a search, written next to
// report.jsonl from the same data. It is generated as a stream of small chunks and refers to
// images by relative path only (lazily loaded), so neither writing nor opening a 10,000-item page
// holds the images in memory, and it works offline from file://. A run whose items are a
// manifest's products times its variants gets the product layout instead (gallery-products.ts).
import type { PlannedItem } from '../manifest/normalize.js';
import { writeFileAtomic } from '../runstate/index.js';
import { escapeHtml, GALLERY_CSP, GALLERY_CSS, GALLERY_SCRIPT, imageHref } from './gallery-page.js';
import {
  checkFindings,
  errorText,
  itemDetails,
  itemFacts,
  REVIEW_BAR,
  runFacts,
  statusButtons,
  VIEWER_DIALOG,
  type GallerySummary,
} from './gallery-parts.js';
import { isProductEntry, productGalleryHtml } from './gallery-products.js';
import type { ReportLine } from './report-line.js';

export type { GallerySummary } from './gallery-parts.js';

export const GALLERY_FILE = 'index.html';

/** Thumbnails shown per card; further images of the item are listed as links. */
const MAX_THUMBNAILS = 4;

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

/**
 * The page, chunk by chunk, so memory does not grow with the run: one card per item, or, when the
 * items carry their product and variant, the product layout.
 */
export function* galleryHtml(summary: GallerySummary, entries: Iterable<GalleryEntry>): Generator<string> {
  const iterator = entries[Symbol.iterator]();
  const first = iterator.next();
  if (!first.done && isProductEntry(first.value)) {
    yield* productGalleryHtml(summary, first.value, iterator);
    return;
  }
  yield pageHead(summary);
  if (!first.done) yield card(first.value);
  for (let next = iterator.next(); !next.done; next = iterator.next()) yield card(next.value);
  yield pageTail();
}

function pageHead(summary: GallerySummary): string {
  const name = escapeHtml(summary.manifest);
  const buttons = statusButtons(summary);
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
<p class="run">${runFacts(summary)}</p>
<nav class="filters" aria-label="Filter items">
${buttons.join('\n')}
<input type="search" id="search" placeholder="Search id or prompt" aria-label="Search id or prompt">
<output id="shown">showing ${summary.items} of ${summary.items}</output>
</nav>
${REVIEW_BAR}
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
  const facts = itemFacts(line, item)
    .map((fact) => `<span>${escapeHtml(fact)}</span>`)
    .join(' · ');
  const error = line.error === null ? '' : `<p class="error">${escapeHtml(errorText(line))}</p>`;
  const findings = checkFindings(line);
  const checks = findings === '' ? '' : `<p class="checks">${escapeHtml(findings)}</p>`;
  const prompt = escapeHtml(item.prompt);
  return `<article class="card" data-status="${escapeHtml(line.status)}" data-id="${escapeHtml(line.id)}">
${thumbnails(line, item.n)}<div class="info">
<div class="head"><input type="checkbox" class="pick" aria-label="Select ${escapeHtml(line.id)} to generate again"><h2 class="id">${escapeHtml(line.id)}</h2><span class="badge ${escapeHtml(line.status)}">${escapeHtml(line.status)}</span></div>
<p class="prompt" title="${prompt}">${prompt}</p>
<p class="facts" title="${escapeHtml(itemDetails(line, item))}">${facts}</p>
${error}${checks}${moreImages(line)}</div>
</article>
`;
}

function pageTail(): string {
  return `</main>
${VIEWER_DIALOG}
<script>${GALLERY_SCRIPT}</script>
</body>
</html>
`;
}
