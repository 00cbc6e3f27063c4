// A manifest where the CLI or a worker reads it: a local file, or an object in an S3-compatible
// store (`s3://bucket/catalogs/shop.yaml`, reached with the standard AWS environment, as outputs
// are: docs/storage.md). An object is copied into a scratch folder with what it names relative to
// itself (its items_file, and the reference images beside it when it has any), then loaded by
// the one loader (load.ts), so that a manifest means the same wherever it is kept. Problems name
// the s3:// URLs, never the scratch folder.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, extname, isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { parse as parseYaml } from 'yaml';
import { isUserError, UserError } from '../common/errors.js';
import { classifyS3Error, type S3CallContext } from '../storage/errors.js';
import { s3ConnectionOf, type S3ConnectionOptions } from '../storage/s3-connection.js';
import { isS3Url, keyProblem, parseS3Url, s3UrlOf, type S3Location } from '../storage/s3-location.js';
import { loadManifest, type LoadedManifest } from './load.js';
import { STATE_DIR_NAME } from './schema.js';

/** Reference images copied beside an s3:// manifest at most: a catalog's photos belong in its items. */
export const MAX_MIRRORED_IMAGES = 5_000;
const IMAGE_EXTENSIONS = new Set(['.png', '.jpg', '.jpeg', '.webp', '.gif']);

export interface ManifestAt {
  manifest: LoadedManifest;
  /** Removes the scratch copy of an s3:// manifest; call once its references are in the run's store. */
  release(): Promise<void>;
}

/** `s3://bucket/a/b.yaml` as the folder's location and the object's name in it. */
export function manifestObjectOf(url: string): { folder: S3Location; name: string } {
  const parsed = parseS3Url(url);
  if ('problems' in parsed) throw new UserError('manifest_invalid', `${url}: ${parsed.problems.join('; ')}`);
  const slash = parsed.prefix.lastIndexOf('/');
  const name = parsed.prefix.slice(slash + 1);
  if (name === '' || url.endsWith('/'))
    throw new UserError('manifest_invalid', `${url}: names a bucket or a folder, not a manifest`);
  return { folder: { bucket: parsed.bucket, prefix: slash < 0 ? '' : parsed.prefix.slice(0, slash) }, name };
}

/**
 * Loads the manifest at `location` (a path, or an s3:// URL); throws the loader's UserError with
 * every problem. `cwd`: where an S3 output's local records go (`.pixelmill/s3/...`), as for a
 * manifest in that folder.
 */
export async function loadManifestAt(
  location: string,
  options: S3ConnectionOptions & { cwd?: string } = {},
): Promise<ManifestAt> {
  if (!isS3Url(location)) return { manifest: loadManifest(location), release: async () => undefined };
  const scratch = await mkdtemp(join(tmpdir(), 'pixelmill-manifest-'));
  const release = () => rm(scratch, { recursive: true, force: true });
  try {
    const manifest = await loadMirrored(location, scratch, options);
    return { manifest, release };
  } catch (error) {
    await release();
    throw error;
  }
}

class ObjectReader {
  readonly #client: S3Client;
  readonly #context: S3CallContext;

  constructor(
    readonly folder: S3Location,
    options: S3ConnectionOptions,
  ) {
    const { config, where } = s3ConnectionOf({ ...options, location: folder });
    this.#client = new S3Client(config);
    this.#context = { url: s3UrlOf(folder), bucket: folder.bucket, where };
  }

  #key(path: string): string {
    return this.folder.prefix === '' ? path : `${this.folder.prefix}/${path}`;
  }

  /** The object's bytes, or undefined when there is none. */
  async get(path: string): Promise<Uint8Array | undefined> {
    try {
      const answer = await this.#client.send(
        new GetObjectCommand({ Bucket: this.folder.bucket, Key: this.#key(path) }),
      );
      return (await answer.Body?.transformToByteArray()) ?? new Uint8Array();
    } catch (error) {
      const { name, $metadata } = error as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (name === 'NoSuchKey' || ($metadata?.httpStatusCode === 404 && name !== 'NoSuchBucket'))
        return undefined;
      throw classifyS3Error(error, this.#context, false);
    }
  }

  /**
   * The image files under the folder, relative to it, by folders: the run state (`.pixelmill/`)
   * and `skip` (the manifest's own output, when it is under the folder) are never listed.
   */
  async images(skip: string | undefined): Promise<string[]> {
    const found: string[] = [];
    const base = this.folder.prefix === '' ? '' : `${this.folder.prefix}/`;
    /** Folders still to list, relative to the manifest's, each ending in "/" (but the first). */
    const folders = [''];
    while (folders.length > 0) {
      const under = folders.pop()!;
      let token: string | undefined;
      do {
        let page;
        try {
          page = await this.#client.send(
            new ListObjectsV2Command({
              Bucket: this.folder.bucket,
              Prefix: `${base}${under}`,
              Delimiter: '/',
              ...(token ? { ContinuationToken: token } : {}),
            }),
          );
        } catch (error) {
          throw classifyS3Error(error, this.#context, true);
        }
        for (const { Prefix } of page.CommonPrefixes ?? []) {
          const path = (Prefix ?? '').slice(base.length);
          const name = path.replace(/\/$/, '').split('/').pop();
          if (name === STATE_DIR_NAME || (skip !== undefined && path.replace(/\/$/, '') === skip)) continue;
          folders.push(path);
        }
        for (const { Key } of page.Contents ?? []) {
          const path = (Key ?? '').slice(base.length);
          // A key with "." or ".." segments would land outside the scratch folder: never copied.
          if (IMAGE_EXTENSIONS.has(extname(path).toLowerCase()) && keyProblem(path) === undefined)
            found.push(path);
        }
        if (found.length > MAX_MIRRORED_IMAGES) {
          throw new UserError(
            'manifest_invalid',
            `${s3UrlOf(this.folder)}: over ${MAX_MIRRORED_IMAGES} images beside the manifest: keep a manifest with reference images in a folder of its own`,
          );
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    }
    return found;
  }

  close(): void {
    this.#client.destroy();
  }
}

/** A path the manifest names relative to itself, when it stays inside the manifest's folder. */
function inside(path: string): string | undefined {
  if (isAbsolute(path) || /^[a-z][a-z0-9+.-]*:\/\//i.test(path)) return undefined;
  const clean = normalize(path).split(sep).join('/');
  return clean.startsWith('../') || clean === '..' ? undefined : clean;
}

async function put(scratch: string, path: string, bytes: Uint8Array): Promise<void> {
  const file = join(scratch, ...path.split('/'));
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, bytes);
}

/** The manifest's output prefix relative to its folder, when it is an s3:// output under it. */
function outputUnder(data: unknown, folder: S3Location): string | undefined {
  const output = (data as { output?: unknown } | null)?.output;
  const dir = typeof output === 'string' ? output : (output as { dir?: unknown } | undefined)?.dir;
  if (typeof dir !== 'string' || !isS3Url(dir)) return undefined;
  const parsed = parseS3Url(dir);
  if ('problems' in parsed || parsed.bucket !== folder.bucket) return undefined;
  if (folder.prefix === '') return parsed.prefix || undefined;
  return parsed.prefix.startsWith(`${folder.prefix}/`)
    ? parsed.prefix.slice(folder.prefix.length + 1)
    : undefined;
}

async function loadMirrored(url: string, scratch: string, options: S3ConnectionOptions & { cwd?: string }) {
  const { folder, name } = manifestObjectOf(url);
  const reader = new ObjectReader(folder, options);
  try {
    const bytes = await reader.get(name);
    if (bytes === undefined) throw new UserError('manifest_missing', `${url}: no such object in the bucket`);
    await put(scratch, name, bytes);
    const text = Buffer.from(bytes).toString('utf8');
    let data: unknown;
    try {
      data = parseYaml(text);
    } catch {
      data = undefined; // The loader says what is wrong, where.
    }
    const itemsFile = (data as { items_file?: unknown } | null)?.items_file;
    const itemsPath = typeof itemsFile === 'string' ? inside(itemsFile) : undefined;
    let itemsText = '';
    if (itemsPath !== undefined) {
      const items = await reader.get(itemsPath);
      if (items !== undefined) {
        await put(scratch, itemsPath, items);
        itemsText = Buffer.from(items).toString('utf8');
      }
    }
    // Reference images are copied only for a manifest that can name some.
    if (/image_urls/.test(text) || /image_urls/.test(itemsText.slice(0, 65_536))) {
      for (const path of await reader.images(outputUnder(data, folder)))
        await put(scratch, path, (await reader.get(path)) ?? new Uint8Array());
    }
  } finally {
    reader.close();
  }
  const file = join(scratch, name);
  const shown = `${s3UrlOf(folder)}/`;
  let manifest: LoadedManifest;
  try {
    manifest = loadManifest(file);
  } catch (error) {
    if (!isUserError(error)) throw error;
    const named = (line: string): string =>
      line.split(`${scratch}${sep}`).join(shown).split(scratch).join(s3UrlOf(folder));
    throw new UserError(error.code, named(error.message), error.problems.map(named));
  }
  const { settings } = manifest;
  settings.manifestFile = url;
  if (relative(scratch, settings.outputDir).startsWith('..') === false) {
    if (!settings.objectStore) {
      throw new UserError(
        'manifest_invalid',
        `${url}: its output is a folder relative to the bucket: a manifest in a bucket needs an s3:// output (or an absolute folder every worker shares)`,
      );
    }
    const store = settings.objectStore;
    settings.outputDir = resolve(
      options.cwd ?? process.cwd(),
      STATE_DIR_NAME,
      's3',
      store.bucket,
      ...store.prefix.split('/'),
    );
  }
  return manifest;
}
