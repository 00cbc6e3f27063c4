// storeResults' checks of each image it stores (checks/): the downloaded bytes are kept as they
// stream into the store, decoded once after, checked against what the item asked for at the
// levels the plan gives, and a thumbnail of them stored beside the outputs for the gallery
// (`.thumbnails/<path>.webp`).
import { Readable, Transform, pipeline } from 'node:stream';
import { checkImage, DEFAULT_CHECK_LEVELS, type CheckFinding } from '../checks/image-checks.js';
import { inspectImage } from '../checks/inspect.js';
import type { PlannedItem } from '../manifest/normalize.js';
import type { ImageRecord, PlanMeta } from '../runstate/index.js';
import type { ResultStore, StoredAttributes } from '../storage/result-store.js';

/** Where the thumbnail of the image stored at `path` goes, relative to the output. */
export function thumbnailPath(path: string): string {
  return `.thumbnails/${path}.webp`;
}

/** `body` passed through, its bytes kept for the checks (one image: a few MB at most). */
export function keepBytes(body: Readable): { stream: Readable; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  const keeper = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done(null, chunk);
    },
  });
  // Errors of the download reach the store through the stream it reads.
  const stream = pipeline(body, keeper, () => undefined);
  return { stream, bytes: () => Buffer.concat(chunks) };
}

type CheckedFields = Pick<ImageRecord, 'format' | 'width' | 'height' | 'thumbnail' | 'checks'>;

export async function checkStored(
  ctx: { meta: Pick<PlanMeta, 'checks'>; store: ResultStore },
  bytes: Buffer,
  image: {
    path: string;
    ext: string;
    item: Pick<PlannedItem, 'size' | 'resolution'>;
    metadata: StoredAttributes;
  },
): Promise<CheckedFields> {
  const { facts, thumbnail } = await inspectImage(bytes);
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
