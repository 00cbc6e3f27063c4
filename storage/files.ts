// File helpers both stores share: writing a stream to a new file while computing its sha256 (so
// no image is ever buffered whole or read twice), hashing a file, and a plain existence check.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { access } from 'node:fs/promises';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { StoredImage } from './result-store.js';

/** Streams `body` into `file`, which must not exist yet, and returns its sha256 and size. */
export async function writeHashed(
  body: Readable,
  file: string,
  options: { mode?: number; durable?: boolean } = {},
): Promise<StoredImage> {
  const hash = createHash('sha256');
  let bytes = 0;
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  // `durable`: fsynced on the stream's own descriptor before it closes (no second open).
  const out = createWriteStream(file, {
    flags: 'wx',
    ...(options.mode !== undefined ? { mode: options.mode } : {}),
    ...(options.durable ? { flush: true } : {}),
  });
  try {
    await pipeline(body, hashing, out);
  } catch (error) {
    // A body that fails at once destroys the file stream while it is still opening, and the open
    // then creates the file after the caller's clean-up. Waiting for its close orders the two.
    if (!out.closed) await once(out, 'close');
    throw error;
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
