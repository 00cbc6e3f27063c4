// Slots handed out first come, first served, within one process: how a worker bounds work that
// Temporal's task queues cannot (submits whose outcome a crash would lose, batch files streamed at
// once). A waiter whose signal aborts leaves the queue.

/** Gives the slot back; calling it again does nothing. */
export type Release = () => void;

export class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  async take(signal?: AbortSignal): Promise<Release> {
    if (this.#free > 0) this.#free--;
    else
      await new Promise<void>((resolve, reject) => {
        const abort = (): void => {
          const at = this.#waiting.indexOf(ready);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(signal!.reason);
        };
        const ready = (): void => {
          signal?.removeEventListener('abort', abort);
          resolve();
        };
        this.#waiting.push(ready);
        signal?.addEventListener('abort', abort, { once: true });
      });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    };
  }
}
