// Remembers which tasks' webhooks were already handed to their shard, so that the service's
// repeated deliveries (duplicates, retries after a lost answer, replays) signal a shard once.
// Bounded in both size and age: a forgotten id costs only a signal the shard ignores.

export interface SeenTasksOptions {
  /** Most ids remembered; the least recently seen go first. */
  capacity: number;
  /** How long an id is remembered, in milliseconds. */
  ttlMs: number;
  now?: () => number;
}

export class SeenTasks {
  readonly #capacity: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Insertion order is recency order: a hit moves its id to the end. */
  readonly #seenAt = new Map<string, number>();

  constructor(options: SeenTasksOptions) {
    this.#capacity = options.capacity;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
  }

  has(taskId: string): boolean {
    const at = this.#seenAt.get(taskId);
    if (at === undefined) return false;
    this.#seenAt.delete(taskId);
    if (this.#now() - at > this.#ttlMs) return false;
    this.#seenAt.set(taskId, at);
    return true;
  }

  add(taskId: string): void {
    this.#seenAt.delete(taskId);
    this.#seenAt.set(taskId, this.#now());
    while (this.#seenAt.size > this.#capacity) {
      const oldest = this.#seenAt.keys().next().value as string;
      this.#seenAt.delete(oldest);
    }
  }

  get size(): number {
    return this.#seenAt.size;
  }
}
