// Where re-hosted result images go. A run talks to storage only through this interface, so that
// an object store (S3) can be added beside the local directory without touching the activities.
import type { Readable } from 'node:stream';

/** What a stored image is checked against: its recorded size and sha256 (hex). */
export interface StoredImage {
  sha256: string;
  bytes: number;
}

export interface ResultStore {
  /** A human-readable description of the location, e.g. the directory path. */
  readonly location: string;
  /**
   * True when `path` (relative to the store's root) holds exactly the recorded image: same size
   * and same sha256. A missing, shorter or altered file is not "had".
   */
  has(path: string, expected: StoredImage): Promise<boolean>;
  /**
   * Stores the stream at `path` (relative to the root), hashing it on the way. The image appears
   * at `path` only once it is complete: a failed or cancelled stream leaves the previous content
   * (if any) in place and no partial file behind.
   */
  put(path: string, body: Readable): Promise<StoredImage>;
}

/** A path that would leave the store's root (absolute, `..`, empty segments). */
export class UnsafeStoragePathError extends Error {
  override name = 'UnsafeStoragePathError';
  readonly code = 'storage_path_unsafe';
}
