// The reference images of a submit (`image_urls`), fetched as a provider that validates its
// inputs does: every URL downloaded at submit (a timeout, a size cap), answered with an image
// content type, and decodable as an image; any that is not fails the submit with a 400. The first
// one is kept as a small thumbnail that the task's result images show (images/render.ts), so a
// test can tell it was used. Decoding is sharp's (libvips), not the client's magic-byte check.
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { EmulatorApiError } from './errors.js';

/** The thumbnail's long side in pixels: visible when drawn, small to keep per task. */
const THUMBNAIL_SIDE = 64;
/** Thumbnails kept by content, so that a photo many items share is decoded once. */
const THUMBNAILS_KEPT = 1024;

export interface ReferenceConfig {
  /** Download the references at submit; off: take any http(s) URL unread (the old behaviour). */
  fetch: boolean;
  timeout_ms: number;
  max_bytes: number;
}

/** The first reference of a task, as its images show it: RGB pixels, row by row. */
export interface ReferenceThumbnail {
  sha256: string;
  width: number;
  height: number;
  rgb: Buffer;
}

export class ReferenceFetcher {
  readonly #thumbnails = new Map<string, ReferenceThumbnail>();
  /** Reference images downloaded and checked (for /_emulator/stats). */
  fetched = 0;

  constructor(private readonly config: ReferenceConfig) {}

  /** Downloads and checks every URL; the first one's thumbnail, undefined when there is none. */
  async fetchAll(urls: readonly string[]): Promise<ReferenceThumbnail | undefined> {
    if (!this.config.fetch || urls.length === 0) return undefined;
    const images = await Promise.all(urls.map((url, index) => this.#download(url, index)));
    this.fetched += images.length;
    return this.#thumbnailOf(images[0]!);
  }

  async #download(url: string, index: number): Promise<Buffer> {
    // The URL is not echoed: a presigned one carries a signature that does not belong in logs.
    const fail = (
      code: 'image_url_unreachable' | 'image_url_not_image' | 'image_url_too_large',
      reason: string,
    ) => new EmulatorApiError(code, { index, reason, max_bytes: this.config.max_bytes });
    let response: Response;
    try {
      response = await fetch(url, {
        signal: AbortSignal.timeout(this.config.timeout_ms),
        redirect: 'follow',
      });
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError';
      throw fail(
        'image_url_unreachable',
        timedOut ? `no answer within ${this.config.timeout_ms} ms` : 'connection failed',
      );
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw fail('image_url_unreachable', `HTTP ${response.status}`);
    }
    const type = response.headers.get('content-type') ?? '';
    if (!/^image\//i.test(type)) {
      await response.body?.cancel();
      throw fail('image_url_not_image', `content type "${type || 'none'}"`);
    }
    const declared = Number(response.headers.get('content-length'));
    if (declared > this.config.max_bytes) {
      await response.body?.cancel();
      throw fail('image_url_too_large', `${declared} bytes`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body ?? []) {
        size += chunk.byteLength;
        if (size > this.config.max_bytes)
          throw fail('image_url_too_large', `over ${this.config.max_bytes} bytes`);
        chunks.push(Buffer.from(chunk));
      }
    } catch (error) {
      if (error instanceof EmulatorApiError) throw error;
      throw fail('image_url_unreachable', 'the download broke off');
    }
    const bytes = Buffer.concat(chunks);
    try {
      await sharp(bytes).metadata();
    } catch {
      throw fail('image_url_not_image', 'it does not decode as an image');
    }
    return bytes;
  }

  async #thumbnailOf(bytes: Buffer): Promise<ReferenceThumbnail> {
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const kept = this.#thumbnails.get(sha256);
    if (kept) return kept;
    const { data, info } = await sharp(bytes)
      .resize(THUMBNAIL_SIDE, THUMBNAIL_SIDE, { fit: 'inside' })
      .flatten({ background: '#ffffff' })
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const thumbnail = { sha256, width: info.width, height: info.height, rgb: data };
    if (this.#thumbnails.size >= THUMBNAILS_KEPT)
      this.#thumbnails.delete(this.#thumbnails.keys().next().value!);
    this.#thumbnails.set(sha256, thumbnail);
    return thumbnail;
  }
}
