// An RGB pixel buffer with the few drawing primitives result images need. Rectangles are filled
// with Buffer.fill/copyWithin rather than per-pixel JavaScript, which keeps a 4K image fast.
//
// Two layouts, so that no encoder copies the pixels first: `png`, a PNG's uncompressed image data
// (each row starts with its filter-type byte, 0, no filter), which png.ts deflates as it is; and
// `rgb`, bare RGB rows, which sharp takes as raw input for JPEG and WebP.

export type Rgb = readonly [number, number, number];
export type CanvasLayout = 'png' | 'rgb';

export interface CanvasOptions {
  layout?: CanvasLayout;
  /** Memory to draw in (zeroed here), at least `bytesFor(width, height, layout)`; else allocated. */
  data?: Buffer;
}

export class RgbCanvas {
  /** `png`: rows of 1 + 3 x `width` bytes, a filter-type byte then the triplets; `rgb`: the triplets. */
  readonly data: Buffer;
  readonly layout: CanvasLayout;
  readonly #rowPrefix: number;
  readonly #rowStride: number;

  static bytesFor(width: number, height: number, layout: CanvasLayout): number {
    return ((layout === 'png' ? 1 : 0) + width * 3) * height;
  }

  constructor(
    readonly width: number,
    readonly height: number,
    { layout = 'png', data }: CanvasOptions = {},
  ) {
    this.layout = layout;
    this.#rowPrefix = layout === 'png' ? 1 : 0;
    this.#rowStride = this.#rowPrefix + width * 3;
    const bytes = RgbCanvas.bytesFor(width, height, layout);
    this.data = data ? data.subarray(0, bytes).fill(0) : Buffer.alloc(bytes);
  }

  /** Fills the rectangle, clipped to the canvas. */
  fillRect(x: number, y: number, w: number, h: number, color: Rgb): void {
    const x0 = Math.max(0, Math.floor(x));
    const y0 = Math.max(0, Math.floor(y));
    const x1 = Math.min(this.width, Math.floor(x + w));
    const y1 = Math.min(this.height, Math.floor(y + h));
    if (x1 <= x0 || y1 <= y0) return;
    const first = this.#offset(x0, y0);
    const span = (x1 - x0) * 3;
    this.data.fill(Buffer.from(color), first, first + span);
    if (span === this.#rowStride) return this.#repeat(first, span, (y1 - y0) * span);
    for (let row = y0 + 1; row < y1; row++) this.data.copyWithin(this.#offset(x0, row), first, first + span);
  }

  /**
   * Draws `image` (RGB pixels, row by row) scaled to w x h at (x, y), nearest neighbour: a
   * reference thumbnail in a result image.
   */
  drawImage(
    image: { width: number; height: number; rgb: Buffer },
    x: number,
    y: number,
    w: number,
    h: number,
  ): void {
    for (let row = 0; row < h; row++) {
      const ty = y + row;
      if (ty < 0 || ty >= this.height) continue;
      const sy = Math.min(image.height - 1, Math.floor((row * image.height) / h));
      for (let col = 0; col < w; col++) {
        const tx = x + col;
        if (tx < 0 || tx >= this.width) continue;
        const sx = Math.min(image.width - 1, Math.floor((col * image.width) / w));
        image.rgb.copy(
          this.data,
          this.#offset(tx, ty),
          (sy * image.width + sx) * 3,
          (sy * image.width + sx) * 3 + 3,
        );
      }
    }
  }

  /** The colour of one pixel (for tests and debugging). */
  pixel(x: number, y: number): Rgb {
    const i = this.#offset(x, y);
    return [this.data[i] ?? 0, this.data[i + 1] ?? 0, this.data[i + 2] ?? 0];
  }

  #offset(x: number, y: number): number {
    return y * this.#rowStride + this.#rowPrefix + x * 3;
  }

  /** Whole rows are one run of bytes: the first row's copies double until they fill `total`. */
  #repeat(first: number, span: number, total: number): void {
    for (let filled = span; filled < total; filled *= 2)
      this.data.copyWithin(first + filled, first, first + Math.min(filled, total - filled));
  }
}
