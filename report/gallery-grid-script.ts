// The product gallery's script (report/gallery-products.ts): it reads the cells from the page's
// JSON data block and draws only the rows near the viewport, positioned by the one row height in
// the CSS (--row-h), so 10,000 products cost a few dozen rows of DOM however far one scrolls.
// Filters and the search work on the data, not on elements: a filter keeps the products with at
// least one item it matches and dims their other cells (the side-by-side is the point); the
// search keeps products whose id, item ids or `column=value` pairs contain every word typed.
// Picks (a cell, a product's row, a variant's column) write the redo command as the item gallery
// does. The thumbnails carry `elementtiming` so the Element Timing API (and the bench) can tell
// when they were painted.
export const GRID_SCRIPT = `
(() => {
  const body = document.body;
  // Parsed once, then the data block leaves the document: its text is as big as the cells.
  const data = document.getElementById('gallery-cells');
  const records = JSON.parse(data.textContent);
  data.remove();
  const columns = JSON.parse(document.getElementById('gallery-variants').textContent);
  const columnOf = new Map(columns.map((variant, c) => [variant, c]));
  const products = [];
  const cells = [];
  for (const record of records) {
    if ('product' in record) {
      products.push({ id: record.product, variables: record.variables, cells: columns.map(() => null) });
    } else {
      record.index = cells.length;
      cells.push(record);
      products[record.row].cells[columnOf.get(record.variant)] = record;
    }
  }
  body.style.setProperty('--cols', String(columns.length));
  document.getElementById('products').textContent = String(products.length);
  document.getElementById('variants').textContent = String(columns.length);

  const rowsEl = document.getElementById('rows');
  const buttons = Array.from(document.querySelectorAll('.filters button'));
  const search = document.getElementById('search');
  const shownEl = document.getElementById('shown');
  const empty = document.getElementById('empty');
  // Read once (and again on resize): a style read in every frame would cost a style recalculation.
  let height = parseFloat(getComputedStyle(body).getPropertyValue('--row-h'));
  const OVERSCAN = 3;

  const matches = (cell, filter) =>
    filter === 'all' || (filter === 'checks' ? cell.checks !== undefined : cell.status === filter);
  const counts = { all: cells.length, checks: 0 };
  for (const cell of cells) {
    counts[cell.status] = (counts[cell.status] || 0) + 1;
    if (cell.checks !== undefined) counts.checks += 1;
  }
  for (const button of buttons) button.querySelector('.count').textContent = String(counts[button.dataset.filter] || 0);

  let texts = null;
  const textOf = (product) => {
    const parts = [product.id];
    for (const cell of product.cells) if (cell) parts.push(cell.id);
    for (const [key, value] of Object.entries(product.variables)) parts.push(key + '=' + value);
    return parts.join(' ').toLowerCase();
  };

  // shown: the products displayed, by number; drawn: their row elements, by place in shown.
  let shown = [];
  const drawn = new Map();
  let sequence = null;
  function refresh() {
    const filter = body.dataset.filter;
    for (const button of buttons) button.setAttribute('aria-pressed', String(button.dataset.filter === filter));
    const words = search.value.trim().toLowerCase().split(/\\s+/).filter(Boolean);
    if (words.length > 0) texts ??= products.map(textOf);
    shown = [];
    products.forEach((product, i) => {
      if (filter !== 'all' && !product.cells.some((cell) => cell && matches(cell, filter))) return;
      if (words.length > 0 && !words.every((word) => texts[i].includes(word))) return;
      shown.push(i);
    });
    sequence = null;
    rowsEl.style.height = shown.length * height + 'px';
    for (const row of drawn.values()) row.remove();
    drawn.clear();
    draw();
    shownEl.textContent = 'showing ' + shown.length + ' of ' + products.length + ' products';
    const which = filter === 'all' ? '' : filter === 'checks' ? 'flagged ' : filter + ' ';
    empty.textContent =
      words.length === 0 ? 'No products with ' + which + 'items.' : 'No products with ' + which + 'items match "' + search.value.trim() + '".';
    empty.hidden = shown.length > 0;
    syncPicks();
  }

  // Only the rows in the viewport and a few either side exist; the rest are the container's height.
  function draw() {
    const top = rowsEl.getBoundingClientRect().top;
    const first = Math.max(0, Math.floor(-top / height) - OVERSCAN);
    const last = Math.min(shown.length, Math.ceil((innerHeight - top) / height) + OVERSCAN);
    for (const [at, row] of drawn) {
      if (at < first || at >= last) {
        row.remove();
        drawn.delete(at);
      }
    }
    for (let at = first; at < last; at++) {
      if (drawn.has(at)) continue;
      const row = rowElement(shown[at], at * height);
      drawn.set(at, row);
      rowsEl.append(row);
    }
  }
  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      draw();
    });
  }
  addEventListener('scroll', schedule, { passive: true });
  addEventListener('resize', () => {
    height = parseFloat(getComputedStyle(body).getPropertyValue('--row-h'));
    refresh();
  });

  const element = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const checkbox = (className, label) => {
    const box = element('input', className);
    box.type = 'checkbox';
    box.setAttribute('aria-label', label);
    return box;
  };
  function rowElement(index, y) {
    const product = products[index];
    const row = element('div', 'row');
    row.setAttribute('role', 'row');
    row.dataset.product = product.id;
    row.dataset.index = String(index);
    row.style.transform = 'translateY(' + y + 'px)';
    const head = element('div', 'product');
    head.setAttribute('role', 'rowheader');
    const title = element('div', 'head');
    title.append(checkbox('pick-row', 'Select the shown items of ' + product.id), element('h2', 'id', product.id));
    const vars = element('dl', 'vars');
    for (const [key, value] of Object.entries(product.variables)) {
      const pair = element('div');
      pair.title = key + ': ' + value;
      pair.append(element('dt', '', key), element('dd', '', value));
      vars.append(pair);
    }
    head.append(title, vars);
    row.append(head);
    const filter = body.dataset.filter;
    product.cells.forEach((cell, c) => row.append(cellElement(cell, c, filter)));
    syncRow(row, product);
    return row;
  }
  function cellElement(cell, c, filter) {
    if (!cell) return element('div', 'cell none', 'no ' + columns[c]);
    const node = element('div', matches(cell, filter) ? 'cell' : 'cell dim');
    node.setAttribute('role', 'gridcell');
    node.dataset.id = cell.id;
    node.dataset.status = cell.status;
    node.dataset.cell = String(cell.index);
    node.title = cell.prompt + '\\n' + cell.facts + '\\n' + cell.details;
    if (cell.images.length > 0) {
      const thumb = element('div', 'thumb');
      const link = element('a', 'full');
      link.href = cell.images[0][0];
      link.dataset.k = '0';
      const img = element('img');
      img.loading = 'lazy';
      img.decoding = 'async';
      img.setAttribute('elementtiming', 'thumbnail');
      img.alt = cell.id + ', image 1 of ' + cell.n;
      img.src = cell.images[0][1] ?? cell.images[0][0];
      link.append(img);
      thumb.append(link);
      if (cell.images.length > 1) thumb.append(element('span', 'more', '+' + (cell.images.length - 1)));
      node.append(thumb);
    } else {
      node.append(element('div', 'noimage', 'no image'));
    }
    const meta = element('div', 'meta');
    const pick = checkbox('pick', 'Select ' + cell.id + ' to generate again');
    pick.checked = picked.has(cell.id);
    meta.append(pick, element('span', 'badge ' + cell.status, cell.status), element('span', 'facts', cell.facts));
    node.append(meta);
    if (cell.error !== undefined) node.append(element('p', 'error', cell.error));
    if (cell.checks !== undefined) node.append(element('p', 'checks', cell.checks));
    return node;
  }

  // Column heads: a variant's box picks its shown items (those the filter matches).
  const columnsEl = document.getElementById('columns');
  columnsEl.append(element('div', '', 'product'));
  const columnBoxes = columns.map((variant, c) => {
    const label = element('label');
    const box = checkbox('pick-column', 'Select the shown ' + variant + ' items');
    box.dataset.column = String(c);
    label.append(box, element('span', 'variant', variant));
    columnsEl.append(label);
    return box;
  });

  // Review: the items picked make the redo command line and the ids file.
  const picked = new Set();
  const review = document.getElementById('review');
  const redo = document.getElementById('redo');
  const idsFile = document.getElementById('ids-file');
  const pickable = (cell) => cell && matches(cell, body.dataset.filter);
  function setPicked(cells, on) {
    for (const cell of cells) {
      if (on) picked.add(cell.id);
      else picked.delete(cell.id);
    }
    review.hidden = picked.size === 0;
    document.getElementById('picked').textContent = picked.size + ' selected';
    const ids = Array.from(picked);
    redo.textContent = 'pixelmill redo ' + body.dataset.run + ' --ids ' + ids.join(',');
    idsFile.href = 'data:text/plain;charset=utf-8,' + encodeURIComponent(ids.join('\\n') + '\\n');
    syncPicks();
  }
  function tick(box, some, all) {
    box.checked = some && all;
    box.indeterminate = some && !all;
  }
  function syncRow(row, product) {
    const own = product.cells.filter(pickable);
    for (const box of row.querySelectorAll('.cell .pick')) box.checked = picked.has(box.closest('.cell').dataset.id);
    tick(row.querySelector('.pick-row'), own.some((cell) => picked.has(cell.id)), own.length > 0 && own.every((cell) => picked.has(cell.id)));
    if (current) viewerPick.checked = picked.has(current.cell.id);
  }
  function syncPicks() {
    for (const [at, row] of drawn) syncRow(row, products[shown[at]]);
    columnBoxes.forEach((box, c) => {
      let some = false;
      let all = true;
      let any = false;
      for (const i of shown) {
        const cell = products[i].cells[c];
        if (!pickable(cell)) continue;
        any = true;
        if (picked.has(cell.id)) some = true;
        else all = false;
      }
      tick(box, some, any && all);
    });
  }
  rowsEl.addEventListener('change', (event) => {
    const box = event.target;
    const row = box.closest('.row');
    const product = products[Number(row.dataset.index)];
    if (box.matches('.pick-row')) setPicked(product.cells.filter(pickable), box.checked);
    else if (box.matches('.pick')) setPicked([cells[Number(box.closest('.cell').dataset.cell)]], box.checked);
  });
  columnsEl.addEventListener('change', (event) => {
    const c = Number(event.target.dataset.column);
    setPicked(shown.map((i) => products[i].cells[c]).filter(pickable), event.target.checked);
  });
  document.getElementById('copy-redo').addEventListener('click', (event) => {
    const button = event.target;
    navigator.clipboard.writeText(redo.textContent).then(
      () => { button.textContent = 'Copied'; },
      () => { getSelection().selectAllChildren(redo); button.textContent = 'Press Ctrl+C'; },
    );
  });
  document.getElementById('clear-picks').addEventListener('click', () => setPicked(cells, false));

  // The viewer steps through the images of the items shown and matched, row by row.
  const viewer = document.getElementById('viewer');
  const full = viewer.querySelector('img');
  const caption = viewer.querySelector('.caption');
  const original = viewer.querySelector('.original');
  const viewerPick = viewer.querySelector('.viewer-pick');
  let current = null;
  function show(cell, k) {
    current = { cell, k };
    full.src = cell.images[k][0];
    full.alt = cell.id + ', image ' + (k + 1) + ' of ' + cell.n;
    caption.textContent = full.alt;
    original.href = cell.images[k][0];
    viewerPick.checked = picked.has(cell.id);
  }
  function step(by) {
    if (!current) return;
    if (sequence === null) {
      sequence = [];
      const filter = body.dataset.filter;
      for (const i of shown)
        for (const cell of products[i].cells)
          if (cell && matches(cell, filter)) cell.images.forEach((_, k) => sequence.push([cell, k]));
    }
    const at = sequence.findIndex(([cell, k]) => cell === current.cell && k === current.k);
    const next = sequence[at + by];
    if (at >= 0 && next) show(next[0], next[1]);
  }
  rowsEl.addEventListener('click', (event) => {
    const link = event.target.closest('a.full');
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    show(cells[Number(link.closest('.cell').dataset.cell)], Number(link.dataset.k));
    viewer.showModal();
  });
  viewer.addEventListener('click', (event) => {
    if (event.target === viewer || event.target.matches('.close')) viewer.close();
    else if (event.target.matches('.prev')) step(-1);
    else if (event.target.matches('.next')) step(1);
  });
  viewer.addEventListener('close', () => {
    full.removeAttribute('src');
    current = null;
  });
  viewerPick.addEventListener('change', () => { if (current) setPicked([current.cell], viewerPick.checked); });
  document.addEventListener('keydown', (event) => {
    if (event.target === search || event.metaKey || event.ctrlKey || event.altKey) return;
    if (viewer.open && event.key === 'ArrowRight') step(1);
    else if (viewer.open && event.key === 'ArrowLeft') step(-1);
    else if (event.key === 'x') {
      const node = document.activeElement && document.activeElement.closest('.cell');
      const cell = viewer.open && current ? current.cell : node && node.dataset.cell ? cells[Number(node.dataset.cell)] : null;
      if (cell) setPicked([cell], !picked.has(cell.id));
    } else return;
    event.preventDefault();
  });

  function setFilter(filter) {
    if (!buttons.some((button) => button.dataset.filter === filter)) filter = 'all';
    body.dataset.filter = filter;
    history.replaceState(null, '', '#' + filter);
    refresh();
  }
  for (const button of buttons) button.addEventListener('click', () => setFilter(button.dataset.filter));
  search.addEventListener('input', refresh);
  setFilter(location.hash.slice(1) || 'all');
})();
`;
