// PNG encoding of an RgbCanvas (RFC 2083): the signature, IHDR, one IDAT and IEND.
//
// Written here rather than with pngjs's writer because that writer copies every row through a
// JavaScript loop into a second buffer before deflating: in a 2,000-item webhook benchmark that
// copy, its garbage and zlib were two thirds of the emulator's CPU, on a machine it shares with
// the run it stands in for. The canvas already holds the filtered rows (filter type 0), so here
// node's zlib deflates the canvas itself. Tests decode the result with pngjs's reader.
import { crc32, deflateSync } from 'node:zlib';
import type { RgbCanvas } from './canvas.js';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const BIT_DEPTH = 8;
const COLOR_TYPE_RGB = 2;

/** `cutShort`: a whole file whose pixel data stops halfway (a corrupt image, for the faults). */
export function encodePng(canvas: RgbCanvas, { cutShort = false } = {}): Buffer {
  if (canvas.layout !== 'png')
    throw new Error(`encodePng: the canvas is laid out as ${canvas.layout}, not png`);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(canvas.width, 0);
  header.writeUInt32BE(canvas.height, 4);
  header.writeUInt8(BIT_DEPTH, 8);
  header.writeUInt8(COLOR_TYPE_RGB, 9);
  // Bytes 10-12 stay 0: deflate compression, adaptive filtering, no interlace.
  // Level 1 with the default strategy was measured fastest and small for these flat images (an
  // RLE strategy cannot see runs in RGB triplets and gave files 30x larger).
  const deflated = deflateSync(canvas.data, { level: 1 });
  const image = cutShort ? deflated.subarray(0, deflated.length >> 1) : deflated;
  // One copy of the deflated image, into the file.
  return Buffer.concat([
    SIGNATURE,
    ...chunk('IHDR', header),
    ...chunk('IDAT', image),
    ...chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A chunk's parts: length and type, data, and the CRC of type and data. */
function chunk(type: string, data: Buffer): [Buffer, Buffer, Buffer] {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))), 0);
  return [head, data, crc];
}
