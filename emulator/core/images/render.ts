// Result images of any width and height (providers take exact sizes, not only the aspect ratios
// of emulator/apimart/images/render.ts): colours from the prompt, bands and footer marks from the
// image index, the prompt text drawn on it, in PNG or JPEG. Deterministic (same spec, same bytes),
// since downloads are checked by hash across retries, and cached by spec.
//
// Looks a provider can ask for: `normal`, `blank` (one flat colour, as some filters return),
// `black` (all black: what safety checkers put in place of a flagged image) and `corrupt` (its
// image data cut short: a PNG whose IDAT stops halfway, a JPEG that ends early).
import sharp, { type Sharp } from 'sharp';
import { RgbCanvas, type CanvasOptions } from './canvas.js';
import { CELL_HEIGHT, CELL_WIDTH, drawTextLine, lineWidth } from './draw-text.js';
import { paletteFor, type Palette } from './palette.js';
import { encodePng } from './png.js';
import { wrapText } from './text-layout.js';

export type ImageFormat = 'png' | 'jpeg';
export type ImageLook = 'normal' | 'blank' | 'black' | 'corrupt';

export interface ImageSpec {
  prompt: string;
  /** Position of the image within its job (0-based). */
  index: number;
  width: number;
  height: number;
  format: ImageFormat;
  look?: ImageLook;
}

export const CONTENT_TYPES: Record<ImageFormat, string> = { png: 'image/png', jpeg: 'image/jpeg' };

/** The largest side drawn; providers validate sizes before asking (a guard, not a limit of theirs). */
export const MAX_SIDE = 14_142;
const TARGET_COLUMNS = 18;
const MIN_LINES = 3;
const MAX_MARKS = 10;
const JPEG_QUALITY = 90;

/** The canvas of a spec, before encoding. */
export function drawImage(spec: ImageSpec, options?: CanvasOptions): RgbCanvas {
  const { width, height } = drawnSize(spec);
  const canvas = new RgbCanvas(width, height, options);
  const palette = paletteFor(spec.prompt);
  if (spec.look === 'black') return canvas;
  if (spec.look === 'blank') {
    canvas.fillRect(0, 0, width, height, palette.light);
    return canvas;
  }
  const short = Math.min(width, height);
  const margin = Math.max(1, Math.round(short * 0.06));
  const footerScale = Math.max(1, Math.floor(short / 160));
  const footerTop = height - margin - 7 * footerScale;
  const bands = Math.min(height, 3 + spec.index);
  for (let band = 0; band < bands; band++) {
    const top = Math.round((band * height) / bands);
    const bottom = Math.round(((band + 1) * height) / bands);
    canvas.fillRect(0, top, width, bottom - top, band % 2 === 0 ? palette.light : palette.dark);
  }
  paintFooter(canvas, palette, spec.index, margin, footerTop, footerScale);
  paintPrompt(canvas, palette, spec.prompt, {
    x: margin,
    y: margin,
    w: width - 2 * margin,
    h: footerTop - 2 * footerScale - margin,
  });
  return canvas;
}

/** The encoded image. PNG is encoded here; JPEG by sharp (libjpeg), hence the promise. */
export async function renderImage(spec: ImageSpec): Promise<Buffer> {
  if (spec.format === 'png') return encodePng(drawImage(spec), { cutShort: spec.look === 'corrupt' });
  // Huffman optimisation off: about 3 times faster for slightly larger files (measured, 1024x768).
  const jpeg = await encodeDrawn(spec, (image) =>
    image.jpeg({ quality: JPEG_QUALITY, optimiseCoding: false }),
  );
  // Cut short: libjpeg then reports a premature end of data, as for a broken transfer.
  return spec.look === 'corrupt' ? jpeg.subarray(0, Math.floor(jpeg.length * 0.6)) : jpeg;
}

/**
 * The spec drawn and encoded by sharp (`encode` picks the format). The pixels are drawn in
 * scratch memory kept for the next image of the size: a fresh megapixel canvas for each image,
 * page-faulted in and freed again, cost the emulator as much CPU as libjpeg's encoding did, on
 * the machine it shares with the run it stands in for.
 */
export async function encodeDrawn(spec: ImageSpec, encode: (image: Sharp) => Sharp): Promise<Buffer> {
  const { width, height } = drawnSize(spec);
  const scratch = scratchBuffers.take(RgbCanvas.bytesFor(width, height, 'rgb'));
  try {
    const canvas = drawImage(spec, { layout: 'rgb', data: scratch });
    // sharp reads the pixels until its output is done: the scratch is given back only then.
    return await encode(sharp(canvas.data, { raw: { width, height, channels: 3 } })).toBuffer();
  } finally {
    scratchBuffers.give(scratch);
  }
}

/**
 * Encoded images by spec, least recently used evicted once `maxBytes` is exceeded; the same spec
 * renders once while cached, even when asked for concurrently.
 */
export class ImageCache {
  readonly #entries = new Map<string, Buffer>();
  readonly #pending = new Map<string, Promise<Buffer>>();
  #bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly render: (spec: ImageSpec) => Promise<Buffer> = renderImage,
  ) {}

  get(spec: ImageSpec): Promise<Buffer> {
    const key = JSON.stringify([
      spec.prompt,
      spec.index,
      spec.width,
      spec.height,
      spec.format,
      spec.look ?? 'normal',
    ]);
    const cached = this.#entries.get(key);
    if (cached) {
      this.#entries.delete(key);
      this.#entries.set(key, cached);
      return Promise.resolve(cached);
    }
    let rendering = this.#pending.get(key);
    if (!rendering) {
      rendering = this.render(spec)
        .then((bytes) => {
          this.#keep(key, bytes);
          return bytes;
        })
        .finally(() => this.#pending.delete(key));
      this.#pending.set(key, rendering);
    }
    return rendering;
  }

  get bytes(): number {
    return this.#bytes;
  }

  #keep(key: string, bytes: Buffer): void {
    if (bytes.length > this.maxBytes) return;
    this.#entries.set(key, bytes);
    this.#bytes += bytes.length;
    for (const [oldKey, old] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldKey);
      this.#bytes -= old.length;
    }
  }
}

function drawnSize(spec: ImageSpec): { width: number; height: number } {
  return {
    width: Math.min(MAX_SIDE, Math.max(1, Math.round(spec.width))),
    height: Math.min(MAX_SIDE, Math.max(1, Math.round(spec.height))),
  };
}

/** Buffers by size, a few of each kept for reuse (as many as are encoded at once, at most). */
class ScratchBuffers {
  readonly #free = new Map<number, Buffer[]>();

  constructor(private readonly keptPerSize: number) {}

  take(bytes: number): Buffer {
    return this.#free.get(bytes)?.pop() ?? Buffer.allocUnsafeSlow(bytes);
  }

  give(buffer: Buffer): void {
    const free = this.#free.get(buffer.length) ?? [];
    if (free.length < this.keptPerSize) free.push(buffer);
    this.#free.set(buffer.length, free);
  }
}

const scratchBuffers = new ScratchBuffers(8);

function paintFooter(
  canvas: RgbCanvas,
  palette: Palette,
  index: number,
  margin: number,
  top: number,
  scale: number,
): void {
  const side = 7 * scale;
  for (let i = 0; i < Math.min(index + 1, MAX_MARKS); i++)
    canvas.fillRect(margin + i * (side + 3 * scale), top, side, side, palette.mark);
  const label = Array.from(`#${index + 1}`);
  drawTextLine(
    canvas,
    label,
    canvas.width - margin - lineWidth(label.length, scale),
    top,
    scale,
    palette.text,
  );
}

function paintPrompt(
  canvas: RgbCanvas,
  palette: Palette,
  prompt: string,
  area: { x: number; y: number; w: number; h: number },
): void {
  if (area.w <= 0 || area.h <= 0) return;
  const linesAt = (s: number): number => Math.floor((area.h + 2 * s) / (CELL_HEIGHT * s));
  let scale = Math.max(1, Math.floor(area.w / (CELL_WIDTH * TARGET_COLUMNS)));
  while (scale > 1 && linesAt(scale) < MIN_LINES) scale--;
  const lines = wrapText(prompt, Math.floor((area.w + scale) / (CELL_WIDTH * scale)), linesAt(scale));
  const blockHeight = lines.length * CELL_HEIGHT * scale - 2 * scale;
  const top = area.y + Math.floor((area.h - blockHeight) / 2);
  const shadow = Math.max(1, Math.floor(scale / 3));
  lines.forEach((line, i) => {
    const left = area.x + Math.floor((area.w - lineWidth(line.length, scale)) / 2);
    const y = top + i * CELL_HEIGHT * scale;
    drawTextLine(canvas, line, left + shadow, y + shadow, scale, palette.shadow);
    drawTextLine(canvas, line, left, y, scale, palette.text);
  });
}
