// `image_urls` entries that are local files: a path or a glob, relative to the manifest. Each is
// checked when the manifest loads (it exists, it is a readable file, an image by its first bytes,
// under the size limit) and named by its content in the plan (references/reference-uri.ts), so
// that the run, its history and its generation keys never hold a path of the CLI's machine, and
// a replaced photo is a changed item. URLs are passed through as they are.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { globSync } from 'tinyglobby';
import { MAX_IMAGE_URLS } from '../common/generation.js';
import { parseReferenceUri, referenceUri } from '../references/reference-uri.js';
import { sniffImage } from '../references/sniff.js';

/** The largest reference image taken: what the emulator fetches, and well above a product photo. */
export const MAX_REFERENCE_BYTES = 20 * 1024 * 1024;

/** A local reference image found by the manifest: what the CLI puts in the run's store. */
export interface LocalReference {
  /** Absolute path on the CLI's machine; never in a plan. */
  file: string;
  /** Its entry in plans: `pixelmill-ref:<sha256>.<ext>`. */
  uri: string;
  sha256: string;
  ext: string;
  contentType: string;
  bytes: number;
}

const HTTP_URL = /^https?:\/\//i;
const OTHER_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const GLOB_CHARS = /[*?[\]{}]/;

type Checked = LocalReference | { problem: string };

export class ReferenceFiles {
  /** Every local reference found, by URI: each file once, however many items use it. */
  readonly found = new Map<string, LocalReference>();
  readonly #byFile = new Map<string, Checked>();

  constructor(private readonly baseDir: string) {}

  /**
   * `entries` with local files as reference URIs, or undefined after pushing a problem for each
   * entry that is not usable. `at(k)` says where entry k was written (`file:line:col field`).
   */
  resolve(entries: readonly string[], at: (k: number) => string, problems: string[]): string[] | undefined {
    const resolved: string[] = [];
    let ok = true;
    entries.forEach((entry, k) => {
      const fail = (problem: string): void => {
        problems.push(`${at(k)}: ${problem}`);
        ok = false;
      };
      // A URL, or a reference already in the run's store (retry-failed's manifests name them so).
      if (HTTP_URL.test(entry) || parseReferenceUri(entry)) return resolved.push(entry);
      if (OTHER_SCHEME.test(entry)) return fail('must be an http(s) URL or a local image file');
      const files = this.#filesOf(entry);
      if ('problem' in files) return fail(files.problem);
      for (const file of files) {
        const checked = this.#check(file);
        if ('problem' in checked) return fail(`${this.#shown(file, entry)}: ${checked.problem}`);
        this.found.set(checked.uri, checked);
        resolved.push(checked.uri);
      }
    });
    if (!ok) return undefined;
    if (resolved.length > MAX_IMAGE_URLS) {
      problems.push(
        `${at(0).replace(/\[0\]$/, '')}: ${resolved.length} reference images once globs are expanded, over the limit of ${MAX_IMAGE_URLS}`,
      );
      return undefined;
    }
    return resolved;
  }

  /** The files an entry names: itself when it is a file, else the matches of a glob, sorted. */
  #filesOf(entry: string): string[] | { problem: string } {
    const file = resolve(this.baseDir, entry);
    if (!GLOB_CHARS.test(entry) || statSync(file, { throwIfNoEntry: false })) return [file];
    const matches = globSync(entry, { cwd: this.baseDir, absolute: true, expandDirectories: false });
    if (matches.length === 0) return { problem: `${entry}: no file matches this pattern` };
    return matches.sort();
  }

  #shown(file: string, entry: string): string {
    if (!GLOB_CHARS.test(entry)) return entry;
    const rel = relative(this.baseDir, file);
    return isAbsolute(rel) || rel.startsWith('..') ? file : rel;
  }

  #check(file: string): Checked {
    let checked = this.#byFile.get(file);
    if (checked === undefined) {
      checked = checkFile(file);
      this.#byFile.set(file, checked);
    }
    return checked;
  }
}

function checkFile(file: string): Checked {
  const info = statSync(file, { throwIfNoEntry: false });
  if (!info) return { problem: 'file not found' };
  if (info.isDirectory())
    return { problem: 'is a folder, not an image file (a glob such as photos/*.jpg takes its images)' };
  if (!info.isFile()) return { problem: 'is not a regular file' };
  if (info.size === 0) return { problem: 'is empty' };
  if (info.size > MAX_REFERENCE_BYTES) {
    const mib = (info.size / 1048576).toFixed(1);
    return {
      problem: `is ${mib} MiB, over the ${MAX_REFERENCE_BYTES / 1048576} MiB limit for a reference image`,
    };
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    return { problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  const kind = sniffImage(bytes);
  if (!kind) return { problem: 'is not an image (PNG, JPEG, WebP or GIF, by its first bytes)' };
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  return {
    file,
    uri: referenceUri(sha256, kind.ext),
    sha256,
    ext: kind.ext,
    contentType: kind.contentType,
    bytes: bytes.length,
  };
}
