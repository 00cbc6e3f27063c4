// Word wrapping of the prompt into a grid of glyph cells: whitespace collapses, long words are
// split, and text that does not fit ends with "..." on the last line.

/** Lines of characters (code points), at most `maxLines` lines of at most `maxColumns` each. */
export function wrapText(text: string, maxColumns: number, maxLines: number): string[][] {
  if (maxColumns < 1 || maxLines < 1) return [];
  const words = text.split(/\s+/u).filter((word) => word.length > 0);
  const lines: string[][] = [];
  let line: string[] = [];
  const flush = (): void => {
    lines.push(line);
    line = [];
  };
  for (const word of words) {
    let chars = Array.from(word);
    if (line.length > 0 && line.length + 1 + chars.length > maxColumns) flush();
    if (line.length > 0) line.push(' ');
    while (line.length + chars.length > maxColumns) {
      const room = maxColumns - line.length;
      line.push(...chars.slice(0, room));
      chars = chars.slice(room);
      flush();
    }
    line.push(...chars);
  }
  if (line.length > 0) flush();
  if (lines.length <= maxLines) return lines;
  const kept = lines.slice(0, maxLines);
  const last = kept[maxLines - 1] ?? [];
  const ellipsis = Array.from('...').slice(0, maxColumns);
  kept[maxLines - 1] = [...last.slice(0, maxColumns - ellipsis.length), ...ellipsis];
  return kept;
}
