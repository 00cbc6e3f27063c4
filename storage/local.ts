// The local-directory ResultStore. Writes go to a temp file in the target's own directory (so the
// final rename is atomic on the same filesystem), are hashed while streaming (an image is never
// held in memory whole) and are fsynced before the rename: after a crash, a file either is the
// complete image or is not there.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { sha256OfFile, writeHashed } from './files.js';
import { classifyFileError } from './errors.js';
import {
  UnsafeStoragePathError,
  type ResultStore,
  type StoredAttributes,
  type StoredImage,
} from './result-store.js';

/** `.<name>.<12 hex>.tmp`: an image being written, or left half-written by a killed worker. */
const PARTIAL_FILE = /^\..+\.[0-9a-f]{12}\.tmp$/;
/** This process's prefix of its partial names, and a counter after it: unique without a random draw each. */
const PARTIAL_PREFIX = randomBytes(3).toString('hex');
let partials = 0;
const partialName = (file: string): string => {
  partials = (partials + 1) % 0x1000000;
  return join(
    dirname(file),
    `.${basename(file)}.${PARTIAL_PREFIX}${partials.toString(16).padStart(6, '0')}.tmp`,
  );
};

/** Removes every partial write under `root` (a run's output folder, when the run has ended). */
export async function removePartialWrites(root: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(root, { recursive: true, withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const entry of entries) {
    if (entry.isFile() && PARTIAL_FILE.test(entry.name))
      await rm(join(entry.parentPath, entry.name), { force: true });
  }
}

export class LocalResultStore implements ResultStore {
  readonly location: string;
  /** Folders this store made or found: a catalog's images share a few, so mkdir once each. */
  readonly #folders = new Set<string>();

  constructor(root: string) {
    this.location = resolve(root);
  }

  /** The absolute file of a store-relative path; refuses anything outside the root. */
  resolvePath(path: string): string {
    const file = resolve(this.location, path);
    const rel = relative(this.location, file);
    if (isAbsolute(path) || rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      throw new UnsafeStoragePathError(`storage path "${path}" is not inside ${this.location}`);
    }
    return file;
  }

  async has(path: string, expected: StoredImage): Promise<boolean> {
    const file = this.resolvePath(path);
    try {
      const info = await stat(file);
      if (!info.isFile() || info.size !== expected.bytes) return false;
      return (await sha256OfFile(file)) === expected.sha256;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
  }

  async put(
    path: string,
    body: Readable,
    _attributes?: StoredAttributes,
    withFile?: (file: string) => Promise<void>,
  ): Promise<StoredImage> {
    // The body may fail (a dropped connection) before the pipeline below is attached, while the
    // directory is being created: keep that error rather than letting it go uncaught.
    let early: unknown;
    const keep = (error: unknown): void => void (early ??= error);
    body.on('error', keep);
    const file = this.resolvePath(path);
    let stored: StoredImage;
    try {
      stored = await this.#write(file, body);
    } catch (error) {
      body.destroy();
      throw early ?? classifyFileError(error, path);
    } finally {
      body.off('error', keep);
    }
    await withFile?.(file);
    return stored;
  }

  /** Removes what earlier, cut-off writes of `path` left beside it. */
  async discardPartials(path: string): Promise<void> {
    const file = this.resolvePath(path);
    const prefix = `.${basename(file)}.`;
    let names: string[];
    try {
      names = await readdir(dirname(file));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const name of names) {
      if (name.startsWith(prefix) && PARTIAL_FILE.test(name))
        await rm(join(dirname(file), name), { force: true });
    }
  }

  async putFile(path: string, file: string): Promise<StoredImage> {
    return this.put(path, createReadStream(file));
  }

  async copy(from: string, to: string, image: StoredImage): Promise<StoredImage> {
    if (await this.has(to, image)) return image;
    return this.put(to, createReadStream(this.resolvePath(from)));
  }

  async remove(paths: readonly string[]): Promise<void> {
    for (const path of paths) await rm(this.resolvePath(path), { force: true });
  }

  async #write(file: string, body: Readable): Promise<StoredImage> {
    const folder = dirname(file);
    if (!this.#folders.has(folder)) {
      await mkdir(folder, { recursive: true });
      this.#folders.add(folder);
    }
    const temp = partialName(file);
    try {
      const stored = await writeHashed(body, temp, { durable: true });
      await rename(temp, file);
      return stored;
    } catch (error) {
      // A folder removed behind our back: made again by the retry.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') this.#folders.delete(folder);
      await rm(temp, { force: true });
      throw error;
    }
  }
}
