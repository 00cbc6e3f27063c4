// The fixed parts of the product gallery (report/gallery-products.ts): its CSS, and the
// Content-Security-Policy that lets only its own style and script run (its script is
// gallery-grid-script.ts). Like the item gallery it must work from file:// with nothing fetched
// but the run's own images.
import { HEADER_CSS, pageCsp } from './gallery-page.js';
import { GRID_SCRIPT } from './gallery-grid-script.js';

// --row-h is the one row height: the script positions rows by it, so a row's content is clipped
// to it rather than allowed to grow. --cols (the number of variants) is set by the script.
export const GRID_CSS = `
:root{color-scheme:light dark;--bg:#f4f4f2;--card:#fff;--ink:#1d1d1f;--muted:#6b6b70;--line:#dcdcd8;--thumb:#e8e8e4;--row-h:228px;--cols:1}
@media (prefers-color-scheme:dark){:root{--bg:#141416;--card:#1e1e21;--ink:#ececef;--muted:#9a9aa2;--line:#333338;--thumb:#2a2a2e}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--ink);min-width:calc(40px + 190px + var(--cols) * 180px)}
header{position:sticky;top:0;z-index:1;background:var(--bg);border-bottom:1px solid var(--line);padding:12px 20px 0}
${HEADER_CSS}
.filters input{font:inherit;margin-left:auto;padding:4px 10px;border:1px solid var(--line);border-radius:6px;background:var(--card);color:var(--ink);min-width:260px}
#review[hidden]{display:none}
#review{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin:8px 0 0;padding:6px 8px;background:#fff8e1;color:#1d1d1f;border-radius:6px;font-size:13px}
#review code{overflow-wrap:anywhere;flex:1 1 300px;max-height:3.2em;overflow:auto}
#columns,.row{display:grid;grid-template-columns:minmax(180px,.8fr) repeat(var(--cols),minmax(170px,1fr));gap:10px}
#columns{padding:8px 0 6px;font-weight:600}
#columns label{display:flex;gap:6px;align-items:center;overflow-wrap:anywhere}
#rows{position:relative;margin:10px 20px 20px}
.row{position:absolute;top:0;left:0;right:0;height:calc(var(--row-h) - 10px);contain:strict}
.product,.cell{background:var(--card);border:1px solid var(--line);border-radius:8px;overflow:hidden;min-width:0}
.product{padding:8px 10px;display:flex;flex-direction:column;gap:4px}
.product .head{display:flex;gap:6px;align-items:baseline}
.id{margin:0;font-size:13px;font-family:ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.vars{margin:0;font-size:12px;color:var(--muted);overflow:hidden}
.vars div{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.vars dt{display:inline;color:var(--ink)}
.vars dt::after{content:": "}
.vars dd{display:inline;margin:0}
.cell{display:flex;flex-direction:column}
.cell.dim{opacity:.3}
.cell.none{align-items:center;justify-content:center;color:var(--muted);font-size:13px;background:transparent;border-style:dashed}
.thumb{position:relative;height:160px;background:var(--thumb);flex:none}
.thumb a{display:block;height:100%}
.thumb img{display:block;width:100%;height:100%;object-fit:contain}
.thumb .more{position:absolute;right:6px;bottom:6px;background:rgba(0,0,0,.6);color:#fff;font-size:11px;padding:0 6px;border-radius:999px}
.noimage{height:160px;flex:none;display:flex;align-items:center;justify-content:center;color:var(--muted);background:var(--thumb);font-size:13px}
.meta{display:flex;gap:6px;align-items:center;padding:4px 8px 0}
.meta .facts{color:var(--muted);font-size:12px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.pick{margin:0}
.badge{font-size:11px;font-weight:600;text-transform:uppercase;letter-spacing:.03em;padding:1px 7px;border-radius:999px;color:#fff;white-space:nowrap}
.badge.completed{background:#2e7d32}.badge.failed{background:#c62828}.badge.expired{background:#b26a00}
.badge.cancelled{background:#6d6d73}.badge.skipped{background:#47607a}
.error,.checks{margin:0;padding:2px 8px 0;font-size:12px;display:-webkit-box;-webkit-line-clamp:2;-webkit-box-orient:vertical;overflow:hidden;overflow-wrap:anywhere}
.error{color:#c62828}.checks{color:#a15c00}
dialog{max-width:96vw;max-height:96vh;padding:0;border:0;border-radius:8px;background:var(--card);color:var(--ink)}
dialog::backdrop{background:rgba(0,0,0,.8)}
dialog img{display:block;max-width:96vw;max-height:calc(96vh - 40px);object-fit:contain}
dialog p{margin:0;padding:8px 12px;display:flex;gap:12px;justify-content:space-between;align-items:center}
dialog button{font:inherit}
`;

/** As the item gallery's (gallery-page.ts): only this style and script run, images are the run's. */
export const GRID_CSP = pageCsp({ css: GRID_CSS, script: GRID_SCRIPT });
