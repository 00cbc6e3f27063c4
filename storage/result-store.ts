// Where re-hosted result images go. A run talks to storage only through this interface, so that
// an object store (S3) can be added beside the local directory without touching the activities.
import type { Readable } from 'node:stream';
import { PixelmillError } from '../common/errors.js';

/** What a stored image is checked against: its recorded size and sha256 (hex). */
export interface StoredImage {
  sha256: string;
  bytes: number;
}

/**
 * Descriptive attributes of a stored object (item id, image index, ...): an object store keeps
 * them as object metadata; a local directory has nowhere to put them and ignores them. Short
 * ASCII values only (S3 sends them as HTTP headers, 2 KB in all).
 */
export type StoredAttributes = Readonly<Record<string, string>>;

export interface ResultStore {
  /** A human-readable description of the location, e.g. the directory path. */
  readonly location: string;
  /**
   * Fails with one clear StorageError when the store cannot be written (an S3 bucket missing,
   * credentials refused). Absent where there is nothing to check (a directory is created on write).
   */
  check?(): Promise<void>;
  /**
   * True when `path` (relative to the store's root) holds exactly the recorded image: same size
   * and same sha256. A missing, shorter or altered file is not "had".
   */
  has(path: string, expected: StoredImage): Promise<boolean>;
  /**
   * Stores the stream at `path` (relative to the root), hashing it on the way. The image appears
   * at `path` only once it is complete: a failed or cancelled stream leaves the previous content
   * (if any) in place and no partial file behind. `withFile`, when given, is called before `put`
   * resolves with a local file of the complete bytes (the stored file, or an upload's spool), for
   * a reader that must not hold the image in memory (the checks' decode); its error is put's.
   */
  put(
    path: string,
    body: Readable,
    attributes?: StoredAttributes,
    withFile?: (file: string) => Promise<void>,
  ): Promise<StoredImage>;
  /**
   * Stores the local file `file` at `path`, with the same guarantees as `put`. When the store
   * already holds exactly these bytes there (a local store writing its own file, an object with
   * the same sha256), nothing is copied.
   */
  putFile(path: string, file: string, attributes?: StoredAttributes): Promise<StoredImage>;
  /**
   * Copies the image stored at `from` to `to` (both relative to the root), with the guarantees of
   * `put`; nothing is copied when `to` already holds it.
   */
  copy(from: string, to: string, image: StoredImage): Promise<StoredImage>;
  /** Deletes what is stored at `paths`; a path holding nothing is no error. */
  remove(paths: readonly string[]): Promise<void>;
  /**
   * Removes what earlier writes of `path` that were cut off (a killed worker) left behind. Absent
   * where a cut-off write leaves nothing (an object store's upload is never visible half-done).
   */
  discardPartials?(path: string): Promise<void>;
}

/** A path that would leave the store's root (absolute, `..`, empty segments). */
export class UnsafeStoragePathError extends PixelmillError {
  override name = 'UnsafeStoragePathError';
  readonly code = 'storage_path_unsafe';
  readonly retryable = false;
}
