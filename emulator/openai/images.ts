// The images an answer carries: real PNG, JPEG or WebP of the requested size from core's renderer
// (WebP converted by sharp), cached by spec, and `image_padding_bytes` added to each while keeping
// it decodable: a PNG private ancillary chunk (`pmPd`, which decoders skip), JPEG comment segments
// after SOI, a WebP RIFF chunk of its own (RIFF size updated). The padding is one shared buffer per
// size, never copied into an image: an image is handed out as parts to encode one after the other,
// so that an output file of gigabytes is streamed from a few megabytes.
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { ImageCache, renderImage } from '../core/index.js';
import type { OpenAIConfig } from './config.js';
import { dimensions, type ImageRequest, type OutputFormat } from './image-request.js';

/** Encoded images kept, per format family (core's cache for PNG and JPEG, one for WebP). */
const IMAGE_CACHE_BYTES = 192 * 1024 * 1024;
const WEBP_QUALITY = 80;
/** A JPEG segment holds at most 65,535 bytes, its 2-byte length included. */
const JPEG_SEGMENT_DATA = 65_533;

export interface ImageParts {
  parts: Buffer[];
  /** Total bytes of the parts: the decoded image. */
  length: number;
}

export class ImageSource {
  readonly #cache = new ImageCache(IMAGE_CACHE_BYTES);
  readonly #webp = new ImageCache(IMAGE_CACHE_BYTES / 2, async (spec) =>
    sharp(await renderImage({ ...spec, format: 'png' }))
      .webp({ quality: WEBP_QUALITY })
      .toBuffer(),
  );
  readonly #padding = new Map<string, Buffer>();

  constructor(private readonly knobs: () => OpenAIConfig['images']) {}

  /** Image `index` (0-based) of `request`, padded. */
  async get(request: ImageRequest, index: number): Promise<ImageParts> {
    const { width, height } = dimensions(request.size);
    const prompt =
      this.knobs().content === 'one_per_size' ? `${request.size} ${request.format}` : request.prompt;
    const spec = {
      prompt,
      index,
      width,
      height,
      format: request.format === 'jpeg' ? 'jpeg' : 'png',
    } as const;
    const image = request.format === 'webp' ? await this.#webp.get(spec) : await this.#cache.get(spec);
    return this.#pad(image, request.format, this.knobs().image_padding_bytes);
  }

  #pad(image: Buffer, format: OutputFormat, padding: number): ImageParts {
    if (padding === 0) return { parts: [image], length: image.length };
    const block = this.#paddingBlock(format, padding);
    let parts: Buffer[];
    if (format === 'png') {
      // After the signature (8 bytes) and IHDR (25): an ancillary chunk may come anywhere before IEND.
      parts = [image.subarray(0, 33), block, image.subarray(33)];
    } else if (format === 'jpeg') {
      parts = [image.subarray(0, 2), block, image.subarray(2)];
    } else {
      const header = Buffer.from(image.subarray(0, 12));
      header.writeUInt32LE(image.readUInt32LE(4) + block.length, 4);
      parts = [header, image.subarray(12), block];
    }
    return { parts, length: image.length + block.length };
  }

  /** The bytes inserted for `padding`, at least `padding` long (a container's framing included). */
  #paddingBlock(format: OutputFormat, padding: number): Buffer {
    const key = `${format}:${padding}`;
    let block = this.#padding.get(key);
    if (block) return block;
    if (format === 'png') {
      block = Buffer.alloc(12 + padding);
      block.writeUInt32BE(padding, 0);
      block.write('pmPd', 4, 'latin1');
      block.writeUInt32BE(crc32(block.subarray(4, 8 + padding)), 8 + padding);
    } else if (format === 'jpeg') {
      const segments = Math.ceil(padding / JPEG_SEGMENT_DATA);
      block = Buffer.alloc(segments * 4 + padding);
      let at = 0;
      for (let left = padding; left > 0; left -= JPEG_SEGMENT_DATA) {
        const size = Math.min(left, JPEG_SEGMENT_DATA);
        block[at] = 0xff;
        block[at + 1] = 0xfe;
        block.writeUInt16BE(size + 2, at + 2);
        at += 4 + size;
      }
    } else {
      // RIFF chunks are padded to an even size.
      const even = padding + (padding % 2);
      block = Buffer.alloc(8 + even);
      block.write('PADD', 0, 'latin1');
      block.writeUInt32LE(padding, 4);
    }
    this.#padding.set(key, block);
    return block;
  }
}
