// GET/HEAD /results/{id}/sample.{ext}?se=...&sig=...: the delivery host of `result.sample`. No
// x-key (the signature is the credential). In order: a bad or missing signature is 403
// AuthenticationFailed; a task the host does not have (never Ready, or past its retention) is 404
// BlobNotFound; a URL past its expiry is 403 AuthenticationFailed (or 404, sample.expired_status);
// otherwise the image, with the download faults (truncation, slow link).
//
// A complete GET marks the task's result fetched, for the "expired before anyone downloaded it"
// count and the ground truth.
import type { IncomingMessage, ServerResponse } from 'node:http';
import sharp from 'sharp';
import { sendBytes, type ImageFormat } from '../../core/index.js';
import type { BflContext } from '../context.js';
import { badSignatureXml, blobNotFoundXml, contentTypeOf, expiredSignatureXml } from '../sample-url.js';
import type { BflJob } from '../tasks.js';

/** WebP copies kept (core renders PNG and JPEG; WebP is converted from the PNG). */
const WEBP_COPIES_KEPT = 64;

function sendXml(res: ServerResponse, status: number, xml: string): void {
  res.writeHead(status, {
    'content-type': 'application/xml',
    'content-length': Buffer.byteLength(xml),
    'x-ms-error-code': /<Code>(\w+)<\/Code>/.exec(xml)?.[1] ?? 'Unknown',
  });
  res.end(xml);
}

export async function handleDelivery(
  ctx: BflContext,
  req: IncomingMessage,
  res: ServerResponse,
  rest: string,
  query: URLSearchParams,
): Promise<void> {
  const now = ctx.clock.now();
  const requestId = `${(++ctx.samples.deliveryRequests).toString(16).padStart(8, '0')}-0000-0000-0000-000000000000`;
  const checked = ctx.signer.check(rest, query);
  if ('refusal' in checked) {
    if (checked.refusal === 'bad_signature') sendXml(res, 403, badSignatureXml(now, requestId));
    else sendXml(res, 404, blobNotFoundXml(now, requestId));
    return;
  }
  const { ref } = checked;
  const job = ctx.jobs.get(ref.taskId);
  if (!job || job.phaseAt(now) !== 'succeeded' || job.data.format !== ref.format) {
    sendXml(res, 404, blobNotFoundXml(now, requestId));
    return;
  }
  if (now >= ref.expiresAt) {
    ctx.samples.refusedExpired++;
    if (ctx.config.sample.expired_status === 404) sendXml(res, 404, blobNotFoundXml(now, requestId));
    else sendXml(res, 403, expiredSignatureXml(now, requestId, ref.expiresAt));
    return;
  }
  const bytes = await imageOf(ctx, job);
  const { truncate_download_rate: truncateRate, slow_download_kbps: kbps } = ctx.config.faults;
  const truncate = req.method === 'GET' && truncateRate > 0 && ctx.random.downloads() < truncateRate;
  if (truncate) ctx.stats.fault('truncated_download');
  if (req.method === 'GET' && !truncate)
    res.once('finish', () => {
      ctx.samples.downloads++;
      if (job.resultFetchedAt === undefined) {
        job.resultFetchedAt = ctx.clock.now();
        ctx.jobs.recordCustom('fetched', { id: job.id, at: job.resultFetchedAt });
      }
    });
  sendBytes(req, res, bytes, contentTypeOf(job.data.format), { truncate, kbps }, ctx.clock);
}

function imageOf(ctx: BflContext, job: BflJob): Promise<Buffer> {
  const { prompt, width, height, format } = job.data;
  const spec = { prompt, index: 0, width, height };
  if (format !== 'webp') return ctx.images.get({ ...spec, format: format as ImageFormat });
  const copies = ctx.samples.webpCopies;
  let copy = copies.get(job.id);
  if (!copy) {
    copy = ctx.images
      .get({ ...spec, format: 'png' })
      .then((png) => sharp(png).webp({ quality: 90 }).toBuffer());
    copies.set(job.id, copy);
    if (copies.size > WEBP_COPIES_KEPT) copies.delete(copies.keys().next().value!);
  }
  return copy;
}
