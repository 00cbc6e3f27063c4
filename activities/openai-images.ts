// One item's images as OpenAI gives them (base64 in a batch's output line, or in a held call's
// answer), decoded, stored and checked as storeResults stores downloaded ones: the path from the
// output's template, the checks (image-checks.ts) on the stored bytes, the outcome line. An image
// the store already holds byte for byte (an attempt cut off after writing it) is not written
// again: the run's store is the truth.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { errorSummary } from '../common/errors.js';
import type { CollectedOutcome } from '../common/batch-types.js';
import type { ErrorSummary } from '../common/types.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { extensionFor, renderResultPath } from '../manifest/result-paths.js';
import { unreadable } from '../providers/openai/batch-lines.js';
import type { ImageRecord, OutcomeLine, PlanMeta } from '../runstate/index.js';
import { StoragePathError } from '../storage/errors.js';
import { UnsafeStoragePathError, type ResultStore } from '../storage/result-store.js';
import { checkStored, type CheckedFields } from './image-checks.js';

export interface ImageStoreContext {
  meta: PlanMeta;
  store: ResultStore;
  /** A retry: an earlier attempt may have left partial writes behind. */
  retrying: boolean;
}

export interface ItemImages {
  index: number;
  item: PlannedItem;
  attempt: number;
  taskId: string;
  /** Base64, as the answer gave them. */
  images: readonly string[];
  /** `output_format` as the answer said, else the one asked. */
  format?: string;
  cost: number;
}

/** Where an image came from, in the outcome line's `source_url`: the answer that held it. */
export function sourceOf(taskId: string, k: number): string {
  return `openai:${taskId}#${k}`;
}

const CONTENT_TYPE: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  jpg: 'image/jpeg',
  webp: 'image/webp',
};

/**
 * Stores an item's images; its outcome (as the workflow hears it) and outcome line. A failure of
 * the store itself (refused credentials, a full disk) throws: the attempt retries. What is about
 * this item alone (an image that does not decode, a path the store refuses) fails it alone.
 */
export async function storeItemImages(
  ctx: ImageStoreContext,
  request: ItemImages,
): Promise<{ outcome: CollectedOutcome; line: OutcomeLine }> {
  const { item, taskId } = request;
  const format = request.format ?? (item.params?.output_format as string | undefined) ?? 'png';
  const ext = extensionFor(CONTENT_TYPE[format]);
  const records: ImageRecord[] = [];
  let failure: ErrorSummary | undefined;
  for (const [k, base64] of request.images.entries()) {
    const bytes = decodeBase64(base64);
    if (bytes === undefined) {
      failure = unreadable('undecodable_image', `image ${k} is not valid base64`);
      break;
    }
    try {
      records.push(await storeImage(ctx, { item, k, ext, bytes, source: sourceOf(taskId, k) }));
    } catch (error) {
      if (error instanceof UnsafeStoragePathError || error instanceof StoragePathError) {
        failure = errorSummary(error);
        break;
      }
      throw error;
    }
    const decodes = records
      .at(-1)!
      .checks?.find((finding) => finding.check === 'decodes' && finding.level === 'error');
    if (decodes) {
      // Bytes that are no image are a garbled answer, not a judgement on the image: generated again.
      failure = unreadable('undecodable_image', `image ${k} ${decodes.message}`);
      break;
    }
  }
  failure ??= checkFailure(records);
  const line: OutcomeLine = {
    index: request.index,
    id: item.id,
    status: failure ? 'failed' : 'completed',
    task_id: taskId,
    attempts: request.attempt,
    credits_cost: request.cost,
    images: records,
    error: failure ?? null,
  };
  const outcome: CollectedOutcome = failure
    ? { s: 'failed', cost: request.cost, taskId, error: failure, images: records.length }
    : { s: 'completed', cost: request.cost, images: records.length, taskId };
  return { outcome, line };
}

/** Strict base64 (the alphabet, padding only at the end): anything else is a garbled line. */
function decodeBase64(text: string): Buffer | undefined {
  if (text.length === 0 || text.length % 4 === 1 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length > 0 ? bytes : undefined;
}

async function storeImage(
  ctx: ImageStoreContext,
  image: { item: PlannedItem; k: number; ext: string; bytes: Buffer; source: string },
): Promise<ImageRecord> {
  const { meta, store } = ctx;
  const path = renderResultPath(meta.pathTemplate, {
    name: meta.name,
    item: image.item,
    index: image.k,
    ext: image.ext,
  });
  const metadata = {
    'pixelmill-manifest': meta.name,
    'pixelmill-item-id': image.item.id,
    'pixelmill-image-index': String(image.k),
  };
  const sha256 = createHash('sha256').update(image.bytes).digest('hex');
  const expected = { sha256, bytes: image.bytes.length };
  let checked: CheckedFields = {};
  const check = async (input: string | Buffer): Promise<void> => {
    checked = await checkStored(ctx, input, { path, ext: image.ext, item: image.item, metadata });
  };
  if (await store.has(path, expected)) {
    await check(image.bytes);
  } else {
    await store.put(path, Readable.from([image.bytes]), metadata, check);
    if (ctx.retrying) await store.discardPartials?.(path);
  }
  return { path, ...expected, source_url: image.source, ...checked };
}

/** The failure of an item one of whose images failed a check set to `error` (as storeResults says it). */
function checkFailure(records: readonly ImageRecord[]): ErrorSummary | undefined {
  for (const [k, record] of records.entries()) {
    const finding = record.checks?.find((entry) => entry.level === 'error');
    if (finding)
      return {
        type: 'ImageCheckFailed',
        code: `check_${finding.check}`,
        message: `image ${k} ${finding.message}`,
      };
  }
  return undefined;
}
