// Word wrapping of the prompt into a grid of glyph cells: whitespace collapses, long words are
// split, and text that does not fit ends with "..." on the last line.
//
// Prompts may be up to the 1 MiB body limit, so the work is bounded by the grid, not the prompt:
// wrapping stops once one line more than fits is known to exist, and a long word is cut to what
// could ever be shown before it is split into code points.

/** Lines of characters (code points), at most `maxLines` lines of at most `maxColumns` each. */
export function wrapText(text: string, maxColumns: number, maxLines: number): string[][] {
  if (maxColumns < 1 || maxLines < 1) return [];
  // Enough code points to fill every line and overflow into one more.
  const budget = maxColumns * (maxLines + 1);
  const lines: string[][] = [];
  let line: string[] = [];
  const flush = (): void => {
    lines.push(line);
    line = [];
  };
  for (const [word] of text.matchAll(/\S+/gu)) {
    if (lines.length > maxLines) break;
    // A code point is at most two UTF-16 units, so 2 x budget units hold at least `budget` of them.
    const chars = Array.from(word.length > 2 * budget ? word.slice(0, 2 * budget) : word).slice(0, budget);
    if (line.length > 0 && line.length + 1 + chars.length > maxColumns) flush();
    if (line.length > 0) line.push(' ');
    let start = 0;
    while (line.length + chars.length - start > maxColumns) {
      const room = maxColumns - line.length;
      line.push(...chars.slice(start, start + room));
      start += room;
      flush();
    }
    line.push(...chars.slice(start));
  }
  if (line.length > 0) flush();
  if (lines.length <= maxLines) return lines;
  const kept = lines.slice(0, maxLines);
  const last = kept[maxLines - 1] ?? [];
  const ellipsis = Array.from('...').slice(0, maxColumns);
  kept[maxLines - 1] = [...last.slice(0, maxColumns - ellipsis.length), ...ellipsis];
  return kept;
}
