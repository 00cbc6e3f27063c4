// Decodes one stored image with sharp (libvips) and returns what the checks need (its format,
// dimensions and pixel spread) and its thumbnail for the gallery, in one decode: libvips shrinks
// JPEG and WebP on load and streams PNG rows, so a 4K image never sits in memory whole more than
// once. A file that does not decode, or is cut short, says why instead of throwing.
import sharp from 'sharp';
import type { ImageFacts } from './image-checks.js';

/** The thumbnail's long side, in pixels: sharp enough for a contact sheet, a few KB each. */
export const THUMBNAIL_SIDE = 320;
/** Bigger inputs are refused, not decoded (a decompression bomb): well above 4K's 16.8 Mpx. */
const MAX_INPUT_PIXELS = 64 * 1024 * 1024;

export interface Inspected {
  facts: ImageFacts;
  /** WebP, at most THUMBNAIL_SIDE on its long side; absent when the image does not decode. */
  thumbnail?: Buffer;
}

export async function inspectImage(bytes: Buffer): Promise<Inspected> {
  const options = { failOn: 'truncated', limitInputPixels: MAX_INPUT_PIXELS, sequentialRead: true } as const;
  let facts: ImageFacts;
  try {
    const meta = await sharp(bytes, options).metadata();
    facts = { ...(meta.format ? { format: meta.format } : {}), width: meta.width, height: meta.height };
  } catch (error) {
    return { facts: { decodeError: reasonOf(error) } };
  }
  try {
    const thumbnail = await sharp(bytes, options)
      .rotate()
      .resize(THUMBNAIL_SIDE, THUMBNAIL_SIDE, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 80 })
      .toBuffer();
    const stats = await sharp(thumbnail).stats();
    const stdev = Math.max(...stats.channels.slice(0, 3).map((channel) => channel.stdev));
    return { facts: { ...facts, stdev }, thumbnail };
  } catch (error) {
    return { facts: { ...facts, decodeError: reasonOf(error) } };
  }
}

function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message
    .split('\n')[0]!
    .replace(/^Input (buffer|file) /, '')
    .slice(0, 200);
}
