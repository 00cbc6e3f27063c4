// GET /v1/predictions pages: newest first, `next`/`previous` URLs carrying an opaque cursor.
//
// The API's cursors are Django REST framework's CursorPagination (ordering "-created"): base64 of
// a query string `o=<offset>&r=1&p=<position>`, the position being the created time of a boundary
// item as Python prints a datetime (a cursor from the API reference decodes to
// `p=2023-09-08+16%3A19%3A34.791859%2B00%3A00`). This is that algorithm, rewritten: a page
// filters strictly past the position, then skips `offset` items that share the boundary's time, so
// predictions created meanwhile never shift the pages that follow. Ties on created time, which a
// manual clock makes common, are ordered by creation sequence.

export interface Cursor {
  offset: number;
  reverse: boolean;
  /** The boundary's created time as Python prints it, or null (no position yet). */
  position: string | null;
}

/** DRF caps the offset it accepts to bound the work a forged cursor can ask for. */
const OFFSET_CUTOFF = 1000;

/** `2023-09-08 16:19:34.791000+00:00`: Python's str() of an aware UTC datetime. */
export function positionOf(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2023-09-08T16:19:34.791Z
  const fraction = ms % 1000 === 0 ? '' : `.${iso.slice(20, 23)}000`;
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction}+00:00`;
}

/** Milliseconds of a position, or NaN when it is not one. */
export function parsePosition(position: string): number {
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(?:\+00:00|Z)$/.exec(position);
  if (!match) return Number.NaN;
  const ms = Date.parse(`${match[1]}T${match[2]}Z`);
  return ms + Math.floor(Number((match[3] ?? '0').padEnd(6, '0')) / 1000);
}

export function encodeCursor(cursor: Cursor): string {
  const tokens = new URLSearchParams();
  if (cursor.offset !== 0) tokens.set('o', String(cursor.offset));
  if (cursor.reverse) tokens.set('r', '1');
  if (cursor.position !== null) tokens.set('p', cursor.position);
  return Buffer.from(tokens.toString(), 'ascii').toString('base64');
}

/** The cursor of a `cursor` query value, or undefined when it is not a valid one (404 "Invalid cursor"). */
export function decodeCursor(encoded: string): Cursor | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return undefined;
  const tokens = new URLSearchParams(Buffer.from(encoded, 'base64').toString('latin1'));
  const offsetText = tokens.get('o') ?? '0';
  const reverseText = tokens.get('r') ?? '0';
  if (!/^\d+$/.test(offsetText) || !/^\d+$/.test(reverseText)) return undefined;
  const position = tokens.get('p');
  if (position !== null && Number.isNaN(parsePosition(position))) return undefined;
  return {
    offset: Math.min(Number(offsetText), OFFSET_CUTOFF),
    reverse: Number(reverseText) !== 0,
    position,
  };
}

export interface Paged<T> {
  page: T[];
  next: Cursor | null;
  previous: Cursor | null;
}

/**
 * One page of `items`, which are in list order (newest first). `createdAt` gives an item's created
 * time in milliseconds; items of equal time must keep one order across calls.
 */
export function paginate<T>(
  items: readonly T[],
  cursor: Cursor | undefined,
  pageSize: number,
  createdAt: (item: T) => number,
): Paged<T> {
  const { offset, reverse, position } = cursor ?? { offset: 0, reverse: false, position: null };
  let ordered: readonly T[] = reverse ? [...items].reverse() : items;
  if (position !== null) {
    const at = parsePosition(position);
    // The list is newest first: forward pages go to older items, reversed ones to newer.
    ordered = ordered.filter((item) => (reverse ? createdAt(item) > at : createdAt(item) < at));
  }
  const results = ordered.slice(offset, offset + pageSize + 1);
  const page = results.slice(0, pageSize);
  const following = results.length > page.length ? positionOf(createdAt(results[results.length - 1]!)) : null;
  if (reverse) page.reverse();

  const hasNext = reverse ? position !== null || offset > 0 : following !== null;
  const hasPrevious = reverse ? following !== null : position !== null || offset > 0;
  const nextPosition = reverse ? position : following;
  const previousPosition = reverse ? following : position;
  const at = (item: T): string => positionOf(createdAt(item));

  const boundary = (
    walk: T[],
    compareFrom: string | null,
    otherSideExists: boolean,
    sameDirection: boolean,
    otherPosition: string | null,
  ): { offset: number; position: string | null } => {
    let compare = compareFrom;
    let count = 0;
    for (const item of walk) {
      const p = at(item);
      if (p !== compare) return { offset: count, position: p };
      compare = p;
      count++;
    }
    // No two positions differ on the page.
    if (!otherSideExists) return { offset: pageSize, position: null };
    if (sameDirection) return { offset: (cursor?.offset ?? 0) + pageSize, position: otherPosition };
    // Turning around here skips a few items (a known artifact of this cursor scheme).
    return { offset: 0, position: otherPosition };
  };

  let next: Cursor | null = null;
  if (hasNext) {
    const compare = cursor?.reverse && cursor.offset !== 0 ? at(page[page.length - 1]!) : nextPosition;
    const found = boundary([...page].reverse(), compare, hasPrevious, !cursor?.reverse, previousPosition);
    next = { ...found, reverse: false };
  }
  let previous: Cursor | null = null;
  if (hasPrevious) {
    const compare = cursor && !cursor.reverse && cursor.offset !== 0 ? at(page[0]!) : previousPosition;
    const found = boundary(page, compare, hasNext, cursor?.reverse === true, nextPosition);
    previous = { ...found, reverse: true };
  }
  return { page, next, previous };
}
