// File helpers both stores share: writing a stream to a new file while computing its sha256 (so
// no image is ever buffered whole or read twice), hashing a file, and a plain existence check.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access, open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { StoredImage } from './result-store.js';

/**
 * Streams `body` into `file`, which must not exist yet, and returns its sha256 and size. The file
 * is opened before the body is read and closed before this settles, so a caller that removes it
 * after a failure leaves nothing. Chunks go straight to the descriptor, each written whole before
 * the next is read (the body's own backpressure): no stream pipeline, whose per-call abort
 * controller and transform cost more than the writes for the small files of a catalog.
 */
export async function writeHashed(
  body: Readable,
  file: string,
  options: { mode?: number; durable?: boolean } = {},
): Promise<StoredImage> {
  const hash = createHash('sha256');
  let bytes = 0;
  const handle = await open(file, 'wx', options.mode);
  try {
    for await (const chunk of body) {
      const data = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      hash.update(data);
      bytes += data.length;
      for (let written = 0; written < data.length;) {
        written += (await handle.write(data, written)).bytesWritten;
      }
    }
    // `durable`: on disk before the caller renames it into place.
    if (options.durable) await handle.sync();
  } finally {
    await handle.close();
  }
  return { sha256: hash.digest('hex'), bytes };
}

export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export async function pathExists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
