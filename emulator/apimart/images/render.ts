// Result images of the emulator: a real PNG of the dimensions an aspect ratio and a resolution
// give, drawn by core (core/images/render.ts: colours from the prompt, bands and footer marks from
// the image index, the prompt text), with the task's reference thumbnail on top and this API's
// image faults. Rendering is deterministic (same spec, same bytes), because downloads are checked
// by sha256 across retries.
import { PixelmillError } from '../../../common/errors.js';
import type { Resolution } from '../wire.js';
import type { ReferenceThumbnail } from '../references.js';
import { ByteBoundedLru } from './cache.js';
import { wrongAspectOf, type ImageFault } from './faults.js';
import type { RgbCanvas } from '../../core/images/canvas.js';
import { encodePng } from '../../core/images/png.js';
import { drawImage } from '../../core/images/render.js';

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
  const blank = spec.fault === 'blank';
  const look = blank ? 'blank' : 'normal';
  const canvas = drawImage({ prompt: spec.prompt, index: spec.index, width, height, format: 'png', look });
  // A blank image is one flat colour: no reference on it, and never cut short.
  if (blank) return encodePng(canvas);
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
