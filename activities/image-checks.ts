// storeResults' checks of each image it stores (checks/): decoded once from the local file the
// store wrote (the stored file, or an upload's spool), never from memory, checked against what
// the item asked for at the levels the plan gives, and a thumbnail of it stored beside the
// outputs for the gallery (`.thumbnails/<path>.jpg`).
import { Readable } from 'node:stream';
import { checkImage, DEFAULT_CHECK_LEVELS, type CheckFinding } from '../checks/image-checks.js';
import { inspectImage } from '../checks/inspect.js';
import type { PlannedItem } from '../manifest/normalize.js';
import type { ImageRecord, PlanMeta } from '../runstate/index.js';
import type { ResultStore, StoredAttributes } from '../storage/result-store.js';

/** Where the thumbnail of the image stored at `path` goes, relative to the output. */
export function thumbnailPath(path: string): string {
  return `.thumbnails/${path}.jpg`;
}

export type CheckedFields = Pick<ImageRecord, 'format' | 'width' | 'height' | 'thumbnail' | 'checks'>;

export async function checkStored(
  ctx: { meta: Pick<PlanMeta, 'checks'>; store: ResultStore },
  /** The image: a local file (what the stores hand `put`'s reader), or its bytes. */
  input: string | Buffer,
  image: {
    path: string;
    ext: string;
    item: Pick<PlannedItem, 'size' | 'resolution'>;
    metadata: StoredAttributes;
  },
): Promise<CheckedFields> {
  const { facts, thumbnail } = await inspectImage(input);
  const findings: CheckFinding[] = checkImage(
    facts,
    { size: image.item.size, resolution: image.item.resolution, ext: image.ext },
    ctx.meta.checks ?? DEFAULT_CHECK_LEVELS,
  );
  const fields: CheckedFields = {};
  if (facts.format !== undefined) fields.format = facts.format;
  if (facts.width !== undefined) fields.width = facts.width;
  if (facts.height !== undefined) fields.height = facts.height;
  if (thumbnail) {
    const path = thumbnailPath(image.path);
    await ctx.store.put(path, Readable.from([thumbnail]), image.metadata);
    fields.thumbnail = path;
  }
  if (findings.length > 0) fields.checks = findings;
  return fields;
}
