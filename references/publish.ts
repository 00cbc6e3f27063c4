// The CLI's side of local reference images: before a run starts, each file its manifest names is
// put in the run's store once, content-addressed (`<state>/references/<sha256>.<ext>`): an object
// under an s3:// output's prefix, or a file in a local output's state folder. One already there is
// not sent again, whichever run or item put it there. Workers then give the provider a URL for
// it (host.ts); they never read the CLI's files.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../common/errors.js';
import type { LocalReference } from '../manifest/references.js';
import type { RunSettings } from '../manifest/normalize.js';
import { STATE_DIR_NAME, stateDirOf } from '../runstate/plan.js';
import type { S3Objects } from '../storage/s3-objects.js';
import type { S3Location } from '../storage/s3-location.js';
import { REFERENCES_DIR } from './reference-uri.js';

/** Files read and sent at once. */
const PARALLEL_UPLOADS = 8;

export interface PublishedReferences {
  uploaded: number;
  /** Already in the store (an earlier run, or another item's copy). */
  present: number;
}

export type ObjectsOf = (output: S3Location, options: { under: string }) => S3Objects;

/** The file's bytes, as the manifest saw them when it loaded. */
async function bytesOf(reference: LocalReference): Promise<Buffer> {
  const bytes = await readFile(reference.file);
  if (createHash('sha256').update(bytes).digest('hex') !== reference.sha256) {
    throw new UserError(
      'reference_changed',
      `${reference.file}: the reference image changed while the run was being started; run it again`,
    );
  }
  return bytes;
}

export async function publishReferences(
  settings: Pick<RunSettings, 'outputDir' | 'objectStore'>,
  references: readonly LocalReference[],
  objectsOf: ObjectsOf,
): Promise<PublishedReferences> {
  const published: PublishedReferences = { uploaded: 0, present: 0 };
  if (references.length === 0) return published;
  const store = settings.objectStore;
  const put = store
    ? s3Put(objectsOf(store, { under: `${STATE_DIR_NAME}/${REFERENCES_DIR}` }))
    : await folderPut(join(stateDirOf(settings.outputDir), REFERENCES_DIR));
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let k = next++; k < references.length; k = next++) {
      const reference = references[k]!;
      if (await put(reference)) published.uploaded++;
      else published.present++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_UPLOADS, references.length) }, lane));
  return published;
}

type Put = (reference: LocalReference) => Promise<boolean>;

function s3Put(objects: S3Objects): Put {
  return async (reference) => {
    const name = `${reference.sha256}.${reference.ext}`;
    if (await objects.exists(name)) return false;
    await objects.write(name, await bytesOf(reference), { contentType: reference.contentType });
    return true;
  };
}

async function folderPut(folder: string): Promise<Put> {
  await mkdir(folder, { recursive: true });
  return async (reference) => {
    const file = join(folder, `${reference.sha256}.${reference.ext}`);
    const there = existsSync(file) ? await stat(file) : undefined;
    if (there?.size === reference.bytes) return false;
    const partial = `${file}.partial-${process.pid}`;
    await writeFile(partial, await bytesOf(reference));
    await rename(partial, file);
    return true;
  };
}
