// GET/HEAD {delivery}/xezq/{file key}/{out-0.webp | output.webp}: the output files, as
// replicate.delivery serves them (no Authorization needed). A file exists while its prediction
// has succeeded and its data has not been removed (1 hour by default); otherwise 404. The bytes
// are an image of the planned size in the planned format (webp, jpg or png), then the download
// faults apply: a 5xx, a connection cut half-way, a slow link. A complete GET counts as a
// download, for the audit of files removed before anyone fetched them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { encodeDrawn, ImageCache, sendBytes, type ImageSpec } from '../../core/index.js';
import type { ReplicateContext } from '../context.js';
import { CONTENT_TYPES } from '../models.js';
import { DELIVERY_PREFIX, outputFileName } from '../view.js';

export const DELIVERY_PATH = '/delivery/';
export const DELIVERY_PATTERN = `${DELIVERY_PATH}${DELIVERY_PREFIX}/{key}/{file}`;

/**
 * WebP files (core encodes PNG and JPEG), encoded by sharp (libwebp) from core's drawn pixels at
 * its fastest effort: about 15-40 ms for a megapixel against 90-160 ms through a PNG at the default.
 */
export const webpImages = (maxBytes: number): ImageCache =>
  new ImageCache(maxBytes, (spec: ImageSpec) =>
    encodeDrawn(spec, (image) => image.webp({ quality: 80, effort: 0 })),
  );

function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'content-length': 9 });
  res.end('Not Found');
}

export async function handleDelivery(
  ctx: ReplicateContext,
  webp: ImageCache,
  req: IncomingMessage,
  res: ServerResponse,
  rest: string,
): Promise<void> {
  const match = new RegExp(`^${DELIVERY_PREFIX}/([A-Za-z0-9]+)/([a-z0-9.-]+)$`).exec(rest);
  const job = match ? ctx.store.byFile(match[1]!) : undefined;
  const now = ctx.clock.now();
  if (!job || !ctx.store.stateAt(job, now).hasOutput || now >= ctx.store.removedAt(job)) return notFound(res);
  const { plan } = job.data;
  const index = Array.from({ length: plan.count }, (_, i) => i).find(
    (i) => outputFileName(job, i) === match![2],
  );
  if (index === undefined) return notFound(res);

  const spec: ImageSpec = {
    prompt: plan.prompt,
    index,
    width: plan.width,
    height: plan.height,
    format: plan.format === 'jpg' ? 'jpeg' : 'png',
  };
  const bytes = await (plan.format === 'webp' ? webp.get(spec) : ctx.images.get(spec));
  const { truncate_download_rate: truncateRate, slow_download_kbps: kbps } = ctx.config.faults;
  const truncate = truncateRate > 0 && ctx.faultRandom() < truncateRate;
  if (truncate && req.method !== 'HEAD') ctx.stats.fault('truncated_download');
  if (req.method === 'GET' && !truncate) res.once('finish', () => ctx.store.markDownloaded(job, index));
  sendBytes(req, res, bytes, CONTENT_TYPES[plan.format], { truncate, kbps }, ctx.clock, {
    'cache-control': 'public, max-age=3600',
  });
}
