// Draws lines of 5x7 glyphs scaled up by an integer factor, one filled square per glyph pixel.
import type { Rgb, RgbCanvas } from './canvas.js';
import { GLYPH_HEIGHT, GLYPH_WIDTH, glyphColumns, glyphPixel } from './font.js';

/** Horizontal and vertical advance of one glyph cell, in font pixels (glyph plus spacing). */
export const CELL_WIDTH = GLYPH_WIDTH + 1;
export const CELL_HEIGHT = GLYPH_HEIGHT + 2;

/** Width in canvas pixels of a line of `chars` characters at `scale` (no trailing spacing). */
export function lineWidth(chars: number, scale: number): number {
  return chars > 0 ? (chars * CELL_WIDTH - 1) * scale : 0;
}

export function drawTextLine(
  canvas: RgbCanvas,
  chars: readonly string[],
  x: number,
  y: number,
  scale: number,
  color: Rgb,
): void {
  chars.forEach((char, i) => {
    const columns = glyphColumns(char);
    const left = x + i * CELL_WIDTH * scale;
    for (let col = 0; col < GLYPH_WIDTH; col++) {
      for (let row = 0; row < GLYPH_HEIGHT; row++) {
        if (glyphPixel(columns, col, row))
          canvas.fillRect(left + col * scale, y + row * scale, scale, scale, color);
      }
    }
  });
}
