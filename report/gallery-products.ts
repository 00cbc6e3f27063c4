// The gallery of a run whose items are products times variants (a manifest with `variants:`):
// one row per product, one column per variant, so a reviewer compares a product's shots side by
// side. 10,000 products make 30,000 cells, too many to lay out as HTML, so the page carries the
// cells as JSON (a data block the browser never runs) and its script draws only the rows near
// the viewport (gallery-grid-page.ts). The writer still streams: one chunk per cell, and in
// memory only each product's number and the order its variants come in.
import { escapeHtml, imageHref } from './gallery-page.js';
import { GRID_CSP, GRID_CSS } from './gallery-grid-page.js';
import { GRID_SCRIPT } from './gallery-grid-script.js';
import {
  checkFindings,
  errorText,
  filterButton,
  itemDetails,
  itemFacts,
  REVIEW_BAR,
  runFacts,
  statusButtons,
  VIEWER_DIALOG,
  type GallerySummary,
} from './gallery-parts.js';
import type { GalleryEntry } from './gallery.js';
import { VariantOrder } from './gallery-variant-order.js';

/** Whether the entry is one (product, variant) output: then the page is the product layout. */
export function isProductEntry(entry: GalleryEntry): boolean {
  const { product, variant } = entry.line;
  return product !== undefined && variant !== undefined;
}

/** A product's record in the page's data: its id and the catalog columns it was made from. */
export interface GridProduct {
  product: string;
  variables: Record<string, string>;
}

/** A cell's record in the page's data: one output, by its product's number and its variant. */
export interface GridCell {
  id: string;
  /** The product's number, in the order products first come. */
  row: number;
  variant: string;
  status: string;
  /** Each image as [file, thumbnail], the thumbnail left out when there is none. */
  images: [string, string?][];
  n: number;
  prompt: string;
  /** "16:9 · 2K · 1/1 image · 1 credit · 1.2 MB" and "model m · task t · 1 attempt". */
  facts: string;
  details: string;
  /** "type/code: message", and what the checks found; absent when there is nothing. */
  error?: string;
  checks?: string;
}

/**
 * JSON that stays inside its `<script type="application/json">`: a `<` in any string (`</script>`,
 * `<!--`) is written as its escape, which JSON.parse reads back as the same character.
 */
export function jsonInScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/** The page, chunk by chunk: `first` is the entry already taken from `rest` to choose the layout. */
export function* productGalleryHtml(
  summary: GallerySummary,
  first: GalleryEntry,
  rest: Iterator<GalleryEntry>,
): Generator<string> {
  const rows = new Map<string, number>();
  const order = new VariantOrder();
  yield pageHead(summary);
  yield '<script type="application/json" id="gallery-cells">[\n';
  let separator = '';
  for (
    let entry: IteratorResult<GalleryEntry> = { done: false, value: first };
    !entry.done;
    entry = rest.next()
  ) {
    const { line, item } = entry.value;
    // A line without a product (an item from before its manifest had variants) is a row of its own.
    const product = line.product ?? line.id;
    const variant = line.variant ?? '';
    let row = rows.get(product);
    if (row === undefined) {
      row = rows.size;
      rows.set(product, row);
      const record: GridProduct = { product, variables: line.variables ?? {} };
      yield `${separator}${jsonInScript(record)}`;
      separator = ',\n';
    }
    order.see(row, variant);
    const error = errorText(line);
    const checks = checkFindings(line);
    const cell: GridCell = {
      id: line.id,
      row,
      variant,
      status: line.status,
      images: line.images.map((image) =>
        image.thumbnail === undefined
          ? [imageHref(image.path)]
          : [imageHref(image.path), imageHref(image.thumbnail)],
      ),
      n: item.n,
      prompt: item.prompt,
      facts: itemFacts(line, item).join(' · '),
      details: itemDetails(line, item),
      ...(error !== '' ? { error } : {}),
      ...(checks !== '' ? { checks } : {}),
    };
    yield `${separator}${jsonInScript(cell)}`;
    separator = ',\n';
  }
  yield '\n]</script>\n';
  const columns = order.columns(summary.variants);
  yield `<script type="application/json" id="gallery-variants">${jsonInScript(columns)}</script>\n`;
  yield pageTail();
}

function pageHead(summary: GallerySummary): string {
  const name = escapeHtml(summary.manifest);
  const buttons = statusButtons(summary);
  // Counted by the page's script from the cells: the summary has no count of images flagged.
  buttons.push(filterButton('checks', 'Checks', 0));
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${GRID_CSP}">
<meta name="generator" content="pixelmill">
<title>${name} · pixelmill gallery</title>
<style>${GRID_CSS}</style>
</head>
<body class="products" data-filter="all" data-run="${escapeHtml(summary.run_id)}">
<header>
<h1>${name}</h1>
<p class="run">${runFacts(summary, ['<b id="products">0</b> products', '<b id="variants">0</b> variants'])}</p>
<nav class="filters" aria-label="Filter products by their items">
${buttons.join('\n')}
<input type="search" id="search" placeholder="Search product, id or column=value" aria-label="Search product, id or column=value">
<output id="shown"></output>
</nav>
${REVIEW_BAR}
<div id="columns" role="row"></div>
</header>
<p id="empty" hidden></p>
<noscript><p>This gallery draws its rows with JavaScript; report.jsonl lists every item.</p></noscript>
<main id="rows" role="grid" aria-label="Products by variant"></main>
`;
}

function pageTail(): string {
  return `${VIEWER_DIALOG}
<script>${GRID_SCRIPT}</script>
</body>
</html>
`;
}
