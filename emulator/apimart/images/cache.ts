// A least-recently-used cache of buffers bounded by their total size in bytes (used for encoded
// result images: a task's images are downloaded, and retried, many times, but rendering is costly).

export class ByteBoundedLru {
  readonly #maxBytes: number;
  // Map iteration order is insertion order: the first key is the least recently used.
  readonly #entries = new Map<string, Buffer>();
  #bytes = 0;

  constructor(maxBytes: number) {
    if (!Number.isFinite(maxBytes) || maxBytes < 0)
      throw new RangeError(`cache size must be a non-negative number of bytes, got ${maxBytes}`);
    this.#maxBytes = maxBytes;
  }

  /** The cached buffer for `key`, or the one `produce` makes (kept unless larger than the whole cache). */
  get(key: string, produce: () => Buffer): Buffer {
    const cached = this.#entries.get(key);
    if (cached) {
      this.#entries.delete(key);
      this.#entries.set(key, cached);
      return cached;
    }
    const value = produce();
    if (value.length > this.#maxBytes) return value;
    this.#entries.set(key, value);
    this.#bytes += value.length;
    for (const [oldKey, old] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(oldKey);
      this.#bytes -= old.length;
    }
    return value;
  }

  /** Total size of the cached buffers. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Number of cached buffers. */
  get size(): number {
    return this.#entries.size;
  }
}
