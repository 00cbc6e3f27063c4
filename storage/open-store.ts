// Picks a run's ResultStore from its output settings: the local directory, or an S3 location.
// S3 stores are kept per location for the life of the worker, so their connection pools are
// shared by every activity that writes there.
import { LocalResultStore } from './local.js';
import type { ResultStore } from './result-store.js';
import { S3ResultStore } from './s3.js';
import type { S3Location } from './s3-location.js';

/** A run's output as its plan records it (no secrets). */
export interface OutputTarget {
  /** The local output directory; for an S3 output, the local directory of its state and reports. */
  outputDir: string;
  /** Set when images and reports go to an object store. */
  objectStore?: S3Location;
}

export class ResultStores {
  readonly #s3 = new Map<string, S3ResultStore>();

  /** `env` is where AWS_* settings and credentials are read (the standard chain's first step). */
  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {}

  open(target: OutputTarget): ResultStore {
    if (target.objectStore === undefined) return new LocalResultStore(target.outputDir);
    const key = JSON.stringify(target.objectStore);
    let store = this.#s3.get(key);
    if (store === undefined) {
      store = new S3ResultStore({ location: target.objectStore, env: this.env });
      this.#s3.set(key, store);
    }
    return store;
  }

  /** Closes the S3 clients' connections (on worker shutdown). */
  close(): void {
    for (const store of this.#s3.values()) store.close();
    this.#s3.clear();
  }
}
