// An RGB pixel buffer with the few drawing primitives result images need. Rectangles are filled
// with Buffer.fill/copyWithin rather than per-pixel JavaScript, which keeps a 4K image fast.

export type Rgb = readonly [number, number, number];

export class RgbCanvas {
  readonly data: Buffer;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    this.data = Buffer.alloc(width * height * 3);
  }

  /** Fills the rectangle, clipped to the canvas. */
  fillRect(x: number, y: number, w: number, h: number, color: Rgb): void {
    const x0 = Math.max(0, Math.floor(x));
    const y0 = Math.max(0, Math.floor(y));
    const x1 = Math.min(this.width, Math.floor(x + w));
    const y1 = Math.min(this.height, Math.floor(y + h));
    if (x1 <= x0 || y1 <= y0) return;
    const rowStride = this.width * 3;
    const first = y0 * rowStride + x0 * 3;
    const span = (x1 - x0) * 3;
    this.data.fill(Buffer.from(color), first, first + span);
    for (let row = y0 + 1; row < y1; row++) {
      const start = row * rowStride + x0 * 3;
      this.data.copyWithin(start, first, first + span);
    }
  }

  /** The colour of one pixel (for tests and debugging). */
  pixel(x: number, y: number): Rgb {
    const i = (y * this.width + x) * 3;
    return [this.data[i] ?? 0, this.data[i + 1] ?? 0, this.data[i + 2] ?? 0];
  }
}
