// Result images of the emulator: a real PNG of the requested dimensions whose colours come from
// the prompt, whose band pattern and footer marks come from the image index, and which shows the
// prompt text. Rendering is deterministic (same spec, same bytes), because downloads are checked
// by sha256 across retries.
import { PixelmillError } from '../../../common/errors.js';
import type { Resolution } from '../wire.js';
import type { ReferenceThumbnail } from '../references.js';
import { ByteBoundedLru } from './cache.js';
import { wrongAspectOf, type ImageFault } from './faults.js';
import { RgbCanvas } from '../../core/images/canvas.js';
import { CELL_HEIGHT, CELL_WIDTH, drawTextLine, lineWidth } from '../../core/images/draw-text.js';
import { paletteFor, type Palette } from '../../core/images/palette.js';
import { encodePng } from '../../core/images/png.js';
import { wrapText } from '../../core/images/text-layout.js';

export interface ImageSpec {
  prompt: string;
  /** Position of the image within its task (0-based). */
  index: number;
  /** Aspect ratio "w:h", or "auto" (square). */
  size: string;
  resolution: Resolution;
  /** The task's first reference image: drawn at the top left, a third of the short side. */
  reference?: ReferenceThumbnail;
  /** A fault the config injects into this task's images (faults.ts). */
  fault?: ImageFault;
}

/** Where a result image shows its reference: the square at (margin, margin) of this side. */
export function referenceBox(width: number, height: number): { x: number; y: number; side: number } {
  const margin = Math.max(1, Math.round(Math.min(width, height) * 0.06));
  return { x: margin, y: margin, side: Math.round(Math.min(width, height) / 3) };
}

export class ImageSizeError extends PixelmillError {
  override name = 'ImageSizeError';
  readonly code = 'image_size_invalid';
  readonly retryable = false;
}

const LONG_SIDE: Record<Resolution, number> = { '1K': 1024, '2K': 2048, '4K': 4096 };

/** Text is sized so that about this many characters fill a line of the text area. */
const TARGET_COLUMNS = 18;
const MIN_LINES = 3;
const MAX_MARKS = 10;

/** The two terms of an aspect ratio "w:h" (positive integers), or undefined if malformed. */
export function parseAspectRatio(size: string): { w: number; h: number } | undefined {
  if (size === 'auto') return { w: 1, h: 1 };
  const match = /^(\d{1,4}):(\d{1,4})$/.exec(size);
  const w = Number(match?.[1]);
  const h = Number(match?.[2]);
  return w > 0 && h > 0 ? { w, h } : undefined;
}

/** @throws ImageSizeError when `size` is not "w:h" or "auto" or the resolution is unknown. */
export function imageDimensions(size: string, resolution: Resolution): { width: number; height: number } {
  const ratio = parseAspectRatio(size);
  const long = LONG_SIDE[resolution] as number | undefined;
  if (!ratio) throw new ImageSizeError(`size "${size}" is not an aspect ratio like 16:9`);
  if (long === undefined)
    throw new ImageSizeError(`resolution "${String(resolution)}" is not one of 1K, 2K, 4K`);
  const short = (a: number, b: number): number => Math.max(1, Math.round((long * a) / b));
  return ratio.w >= ratio.h
    ? { width: long, height: short(ratio.h, ratio.w) }
    : { width: short(ratio.w, ratio.h), height: long };
}

export function renderResultPng(spec: ImageSpec): Buffer {
  const size = spec.fault === 'wrong_aspect' ? wrongAspectOf(spec.size) : spec.size;
  const { width, height } = imageDimensions(size, spec.resolution);
  const canvas = new RgbCanvas(width, height);
  const palette = paletteFor(spec.prompt);
  if (spec.fault === 'blank') {
    canvas.fillRect(0, 0, width, height, palette.light);
    return encodePng(canvas);
  }
  const margin = Math.max(1, Math.round(Math.min(width, height) * 0.06));
  const footerScale = Math.max(1, Math.floor(Math.min(width, height) / 160));
  const footerTop = height - margin - 7 * footerScale;
  paintBands(canvas, palette, spec.index);
  paintFooter(canvas, palette, spec.index, margin, footerTop, footerScale);
  paintPrompt(canvas, palette, spec.prompt, {
    x: margin,
    y: margin,
    w: width - 2 * margin,
    h: footerTop - 2 * footerScale - margin,
  });
  if (spec.reference) paintReference(canvas, spec.reference);
  return encodePng(canvas, { cutShort: spec.fault === 'corrupt' });
}

/** Encoded result images by spec, least recently used evicted first once `maxBytes` is exceeded. */
export class RenderedImageCache {
  readonly #lru: ByteBoundedLru;
  readonly #render: (spec: ImageSpec) => Buffer;

  /** `render` is replaceable for tests; it must be deterministic. */
  constructor(maxBytes: number, render: (spec: ImageSpec) => Buffer = renderResultPng) {
    this.#lru = new ByteBoundedLru(maxBytes);
    this.#render = render;
  }

  get(spec: ImageSpec): Buffer {
    const key = JSON.stringify([
      spec.prompt,
      spec.index,
      spec.size,
      spec.resolution,
      spec.reference?.sha256,
      spec.fault,
    ]);
    return this.#lru.get(key, () => this.#render(spec));
  }

  /** Total size of the cached PNGs. */
  get bytes(): number {
    return this.#lru.bytes;
  }

  /** Number of cached images. */
  get size(): number {
    return this.#lru.size;
  }
}

/** The reference thumbnail, its aspect kept, centred in the reference box. */
function paintReference(canvas: RgbCanvas, reference: ReferenceThumbnail): void {
  const box = referenceBox(canvas.width, canvas.height);
  const scale = box.side / Math.max(reference.width, reference.height);
  const w = Math.max(1, Math.round(reference.width * scale));
  const h = Math.max(1, Math.round(reference.height * scale));
  canvas.drawImage(
    reference,
    box.x + Math.floor((box.side - w) / 2),
    box.y + Math.floor((box.side - h) / 2),
    w,
    h,
  );
}

/** Horizontal bands alternating two shades; their number grows with the index. */
function paintBands(canvas: RgbCanvas, palette: Palette, index: number): void {
  const count = Math.min(canvas.height, 3 + index);
  for (let band = 0; band < count; band++) {
    const top = Math.round((band * canvas.height) / count);
    const bottom = Math.round(((band + 1) * canvas.height) / count);
    canvas.fillRect(0, top, canvas.width, bottom - top, band % 2 === 0 ? palette.light : palette.dark);
  }
}

/** One square per image position at the bottom left, and "#n" (1-based) at the bottom right. */
function paintFooter(
  canvas: RgbCanvas,
  palette: Palette,
  index: number,
  margin: number,
  top: number,
  scale: number,
): void {
  const side = 7 * scale;
  for (let i = 0; i < Math.min(index + 1, MAX_MARKS); i++) {
    canvas.fillRect(margin + i * (side + 3 * scale), top, side, side, palette.mark);
  }
  const label = Array.from(`#${index + 1}`);
  const left = canvas.width - margin - lineWidth(label.length, scale);
  drawTextLine(canvas, label, left, top, scale, palette.text);
}

function paintPrompt(
  canvas: RgbCanvas,
  palette: Palette,
  prompt: string,
  area: { x: number; y: number; w: number; h: number },
): void {
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
