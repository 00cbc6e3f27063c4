// The Files API's objects: uploaded files (kept in memory, and beside the state file when there is
// one, so a restarted emulator still serves them) and the output and error files of batches, which
// exist once their batch has ended and are generated as they are read (output-file.ts). Listing
// merges both, newest first, with `purpose`, `after`, `limit` and `order`.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const UPLOAD_PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'] as const;

export interface UploadedFile {
  kind: 'upload';
  id: string;
  account: string;
  filename: string;
  purpose: string;
  bytes: number;
  /** ms */
  createdAt: number;
  data: Buffer;
}

/** The output or error file of a batch: its bytes are known once counted, and generated on read. */
export interface BatchFile {
  kind: 'output' | 'error';
  id: string;
  account: string;
  batchId: string;
  filename: string;
  /** ms: when the batch ended. */
  createdAt: number;
}

export type StoredFile = UploadedFile | BatchFile;

/** The File object of the API (`bytes` given by the caller for a batch file). */
export function fileJson(file: StoredFile, bytes: number): Record<string, unknown> {
  return {
    id: file.id,
    object: 'file',
    bytes,
    created_at: Math.floor(file.createdAt / 1000),
    expires_at: null,
    filename: file.filename,
    purpose: file.kind === 'upload' ? file.purpose : 'batch_output',
    status: 'processed',
    status_details: null,
  };
}

export class UploadStore {
  readonly #files = new Map<string, UploadedFile>();
  readonly #deleted = new Set<string>();
  readonly #dir: string | undefined;

  constructor(stateFile: string | null) {
    this.#dir = stateFile === null ? undefined : `${stateFile}.files`;
    if (this.#dir) mkdirSync(this.#dir, { recursive: true });
  }

  add(file: UploadedFile): void {
    // Written before the journal line that names it, so that a replayed upload finds its bytes.
    if (this.#dir) writeFileSync(join(this.#dir, file.id), file.data);
    this.#files.set(file.id, file);
  }

  /** A file the journal names, its bytes read back from beside the state file. */
  restore(meta: Omit<UploadedFile, 'data' | 'kind'>): void {
    if (!this.#dir) return;
    try {
      this.#files.set(meta.id, { ...meta, kind: 'upload', data: readFileSync(join(this.#dir, meta.id)) });
    } catch {
      // Its bytes were never written (killed between the two): as if never uploaded.
    }
  }

  get(id: string, account: string): UploadedFile | undefined {
    const file = this.#files.get(id);
    return file && file.account === account && !this.#deleted.has(id) ? file : undefined;
  }

  delete(id: string): void {
    this.#deleted.add(id);
  }

  isDeleted(id: string): boolean {
    return this.#deleted.has(id);
  }

  *of(account: string): Generator<UploadedFile> {
    for (const file of this.#files.values())
      if (file.account === account && !this.#deleted.has(file.id)) yield file;
  }
}

export interface ListQuery {
  purpose: string | undefined;
  after: string | undefined;
  limit: number;
  order: 'asc' | 'desc';
}

/** One page of `files` (already filtered to those visible now), as GET /v1/files answers it. */
export function pageOf<T extends { id: string; createdAt: number; purpose: string }>(
  files: T[],
  query: ListQuery,
): { items: T[]; hasMore: boolean } {
  let list = files.filter((f) => query.purpose === undefined || f.purpose === query.purpose);
  // Newest first; ids break ties in creation order so that `after` is stable.
  list.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
  if (query.order === 'desc') list.reverse();
  if (query.after !== undefined) {
    const at = list.findIndex((f) => f.id === query.after);
    list = at < 0 ? [] : list.slice(at + 1);
  }
  return { items: list.slice(0, query.limit), hasMore: list.length > query.limit };
}
