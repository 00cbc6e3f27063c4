// The fixed parts of the gallery page (report/gallery.ts): its inline CSS and script, the
// escaping every piece of run data goes through, and the Content-Security-Policy that lets only
// these two inline blocks run. The page must work from file:// with nothing fetched but the
// run's own images, so nothing here refers to an external asset.
import { createHash } from 'node:crypto';
import type { ItemStatus } from '../common/types.js';

/** Filter order in the toolbar; completed and failed are always offered, the rest when present. */
export const STATUSES: readonly ItemStatus[] = ['completed', 'failed', 'expired', 'cancelled', 'skipped'];
export const ALWAYS_OFFERED: ReadonlySet<ItemStatus> = new Set(['completed', 'failed']);

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text safe in element content and in double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
}

/**
 * A store-relative image path as a relative URL: each segment percent-encoded, so that `#`, `?`,
 * `%` or a `:` (which could otherwise start a scheme such as `javascript:`) stay part of the name.
 */
export function imageHref(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

/** The run's line, its filters and counts: the same in the item and the product gallery. */
export const HEADER_CSS = `h1{margin:0 0 2px;font-size:20px}
.run{margin:0 0 10px;color:var(--muted)}
.run b{color:var(--ink);font-weight:600}
.filters{display:flex;flex-wrap:wrap;gap:6px;align-items:center}
.filters button{font:inherit;border:1px solid var(--line);background:var(--card);color:var(--ink);border-radius:999px;padding:3px 12px;cursor:pointer}
.filters button[aria-pressed=true]{background:var(--ink);color:var(--bg);border-color:var(--ink)}
.filters .count{opacity:.7;margin-left:4px}
#shown{color:var(--muted);min-width:90px;text-align:right}
#empty{color:var(--muted);padding:24px 20px;margin:0}`;

// Filtering by status is pure CSS (the body's data-filter), so switching it costs no script
// loop over 10,000 cards; the search sets `hidden` on cards, which the last rule enforces.
export const GALLERY_CSS = `
:root{color-scheme:light dark;--bg:#f4f4f2;--card:#fff;--ink:#1d1d1f;--muted:#6b6b70;--line:#dcdcd8;--thumb:#e8e8e4}
@media (prefers-color-scheme:dark){:root{--bg:#141416;--card:#1e1e21;--ink:#ececef;--muted:#9a9aa2;--line:#333338;--thumb:#2a2a2e}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--ink)}
header{position:sticky;top:0;z-index:1;background:var(--bg);border-bottom:1px solid var(--line);padding:12px 20px}
${HEADER_CSS}
.filters input{font:inherit;margin-left:auto;padding:4px 10px;border:1px solid var(--line);border-radius:6px;background:var(--card);color:var(--ink);min-width:220px}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(230px,1fr));gap:14px;padding:16px 20px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;overflow:hidden;display:flex;flex-direction:column;content-visibility:auto;contain-intrinsic-size:auto 330px}
.thumbs{height:170px;background:var(--thumb);display:grid;gap:2px}
.thumbs.multi{grid-template-columns:1fr 1fr;grid-auto-rows:1fr}
.thumbs a{display:block;min-height:0;overflow:hidden}
.thumbs img{display:block;width:100%;height:100%;object-fit:contain}
.noimage{display:flex;align-items:center;justify-content:center;color:var(--muted);font-size:13px}
.info{padding:8px 10px 10px;display:flex;flex-direction:column;gap:4px}
.head{display:flex;justify-content:space-between;gap:6px;align-items:baseline}
.id{margin:0;font-size:13px;font-family:ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.badge{font-size:11px;font-weight:600;text-transform:uppercase;letter-spacing:.03em;padding:1px 7px;border-radius:999px;color:#fff;white-space:nowrap}
.badge.completed{background:#2e7d32}.badge.failed{background:#c62828}.badge.expired{background:#b26a00}
.badge.cancelled{background:#6d6d73}.badge.skipped{background:#47607a}
.prompt{margin:0;display:-webkit-box;-webkit-line-clamp:3;-webkit-box-orient:vertical;overflow:hidden;overflow-wrap:anywhere}
.facts{margin:0;color:var(--muted);font-size:12px}
.facts span{white-space:nowrap}
.error{margin:0;color:#c62828;font-size:12px;overflow-wrap:anywhere}
#review[hidden]{display:none}
#review{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin:8px 0 0;padding:6px 8px;background:#fff8e1;border-radius:6px;font-size:13px}
#review code{overflow-wrap:anywhere;flex:1 1 300px}
.pick{margin:0 6px 0 0}
.checks{margin:0;color:#a15c00;font-size:12px;overflow-wrap:anywhere}
.more{font-size:12px}
body[data-filter=completed] .card:not([data-status=completed]),
body[data-filter=failed] .card:not([data-status=failed]),
body[data-filter=expired] .card:not([data-status=expired]),
body[data-filter=cancelled] .card:not([data-status=cancelled]),
body[data-filter=skipped] .card:not([data-status=skipped]),
.card[hidden]{display:none}
dialog{max-width:96vw;max-height:96vh;padding:0;border:0;border-radius:8px;background:var(--card);color:var(--ink)}
dialog::backdrop{background:rgba(0,0,0,.8)}
dialog img{display:block;max-width:96vw;max-height:calc(96vh - 40px);object-fit:contain}
dialog p{margin:0;padding:8px 12px;display:flex;gap:12px;justify-content:space-between;align-items:center}
dialog button{font:inherit}
`;

// Counts come from the toolbar (written by the generator); only a search needs a pass over cards.
// A click on a thumbnail opens the image in a dialog; with a modifier key, or without script,
// the link simply opens the file.
export const GALLERY_SCRIPT = `
(() => {
  const body = document.body;
  const cards = Array.from(document.querySelectorAll('main .card'));
  const buttons = Array.from(document.querySelectorAll('.filters button'));
  const search = document.getElementById('search');
  const shown = document.getElementById('shown');
  const empty = document.getElementById('empty');
  let texts = null;
  const countOf = (status) =>
    Number(document.querySelector('.filters button[data-filter="' + status + '"] .count').textContent);
  function refresh() {
    const filter = body.dataset.filter;
    const query = search.value.trim().toLowerCase();
    for (const button of buttons) button.setAttribute('aria-pressed', String(button.dataset.filter === filter));
    let visible = countOf(filter);
    if (query !== '' || texts !== null) {
      texts ??= cards.map((card) => (card.dataset.id + ' ' + card.querySelector('.prompt').textContent).toLowerCase());
      visible = 0;
      cards.forEach((card, i) => {
        const match = query === '' || texts[i].includes(query);
        card.hidden = !match;
        if (match && (filter === 'all' || card.dataset.status === filter)) visible += 1;
      });
    }
    shown.textContent = 'showing ' + visible + ' of ' + cards.length;
    // An empty filter says so, rather than showing a blank page.
    const which = filter === 'all' ? '' : filter + ' ';
    empty.textContent = query === '' ? 'No ' + which + 'items.' : 'No ' + which + 'items match "' + search.value.trim() + '".';
    empty.hidden = visible > 0;
  }
  function setFilter(filter) {
    if (!buttons.some((button) => button.dataset.filter === filter)) filter = 'all';
    body.dataset.filter = filter;
    history.replaceState(null, '', '#' + filter);
    refresh();
  }
  for (const button of buttons) button.addEventListener('click', () => setFilter(button.dataset.filter));
  search.addEventListener('input', refresh);
  const viewer = document.getElementById('viewer');
  const full = viewer.querySelector('img');
  const caption = viewer.querySelector('.caption');
  const original = viewer.querySelector('.original');
  document.querySelector('main').addEventListener('click', (event) => {
    const link = event.target.closest('a.full');
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    show(link);
    viewer.showModal();
  });
  viewer.addEventListener('click', (event) => {
    if (event.target === viewer || event.target.matches('.close')) viewer.close();
    else if (event.target.matches('.prev')) step(-1);
    else if (event.target.matches('.next')) step(1);
  });
  viewer.addEventListener('close', () => full.removeAttribute('src'));

  // Review: items picked (a card's checkbox, or x in the viewer) make the redo command line.
  const picked = new Set();
  const review = document.getElementById('review');
  const redo = document.getElementById('redo');
  const idsFile = document.getElementById('ids-file');
  const viewerPick = viewer.querySelector('.viewer-pick');
  function setPicked(card, on) {
    if (on) picked.add(card.dataset.id);
    else picked.delete(card.dataset.id);
    card.querySelector('.pick').checked = on;
    if (current && current.closest('.card') === card) viewerPick.checked = on;
    review.hidden = picked.size === 0;
    document.getElementById('picked').textContent = picked.size + ' selected';
    const ids = Array.from(picked);
    redo.textContent = 'pixelmill redo ' + body.dataset.run + ' --ids ' + ids.join(',');
    idsFile.href = 'data:text/plain;charset=utf-8,' + encodeURIComponent(ids.join('\\n') + '\\n');
  }
  document.querySelector('main').addEventListener('change', (event) => {
    if (event.target.matches('.pick')) setPicked(event.target.closest('.card'), event.target.checked);
  });
  viewerPick.addEventListener('change', () => { if (current) setPicked(current.closest('.card'), viewerPick.checked); });
  document.getElementById('copy-redo').addEventListener('click', (event) => {
    const button = event.target;
    navigator.clipboard.writeText(redo.textContent).then(
      () => { button.textContent = 'Copied'; },
      () => { getSelection().selectAllChildren(redo); button.textContent = 'Press Ctrl+C'; },
    );
  });
  document.getElementById('clear-picks').addEventListener('click', () => {
    for (const card of cards) if (picked.has(card.dataset.id)) setPicked(card, false);
  });

  // The viewer steps through the images of the cards shown, in order.
  let current = null;
  const shownLinks = () =>
    Array.from(document.querySelectorAll('main .card a.full')).filter((link) => link.closest('.card').offsetParent !== null);
  function show(link) {
    current = link;
    full.src = link.getAttribute('href');
    full.alt = link.querySelector('img').alt;
    caption.textContent = full.alt;
    original.href = link.getAttribute('href');
    viewerPick.checked = picked.has(link.closest('.card').dataset.id);
  }
  function step(by) {
    const links = shownLinks();
    const at = links.indexOf(current);
    const next = links[at + by];
    if (next) show(next);
  }
  document.addEventListener('keydown', (event) => {
    if (event.target === search || event.metaKey || event.ctrlKey || event.altKey) return;
    if (viewer.open && event.key === 'ArrowRight') step(1);
    else if (viewer.open && event.key === 'ArrowLeft') step(-1);
    else if (event.key === 'x') {
      const card = viewer.open && current ? current.closest('.card') : document.activeElement && document.activeElement.closest('.card');
      if (card) setPicked(card, !picked.has(card.dataset.id));
    } else return;
    event.preventDefault();
  });
  setFilter(location.hash.slice(1) || 'all');
})();
`;

/** A CSP source that lets exactly this inline block run. */
function cspHash(source: string): string {
  return `'sha256-${createHash('sha256').update(source).digest('base64')}'`;
}

/**
 * A gallery page's policy: only its own inline style and script run, whatever a prompt contains:
 * even if escaping ever failed, an injected script or inline handler would be blocked. Images: the
 * run's files only.
 */
export function pageCsp({ css, script }: { css: string; script: string }): string {
  return [
    "default-src 'none'",
    "img-src 'self' file:",
    `style-src ${cspHash(css)}`,
    `script-src ${cspHash(script)}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

export const GALLERY_CSP = pageCsp({ css: GALLERY_CSS, script: GALLERY_SCRIPT });
