// GET/HEAD /media/files/{request_id}/{index}.{jpeg|png}: the emulated fal CDN, where result image
// URLs point. Like a CDN it needs no key. An image lives from the request's end for its CDN
// retention (config retention.cdn_seconds, or the request's X-Fal-Object-Lifecycle-Preference),
// independently of the result's own retention; then 404. Download faults apply (truncation, slow
// links), and whole downloads are recorded so audits can count images deleted before download.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendBytes } from '../../core/downloads.js';
import type { FalContext } from '../context.js';
import { hasImages, imagePlans, renderPlan } from '../results.js';
import type { Answer } from '../wire.js';

export const CDN_ROUTE = '/media/files/{request_id}/{file}';

/** Ends of the CDN lifetime of a request's images (clock ms). */
export function cdnExpiresAt(ctx: FalContext, job: { endsAt: number; data: { cdnSeconds: number } }): number {
  return job.endsAt + ctx.sim.ms(job.data.cdnSeconds);
}

/** Serves `rest` (after /media/files/); answers only when there is nothing to serve. */
export async function handleCdn(
  ctx: FalContext,
  req: IncomingMessage,
  res: ServerResponse,
  rest: string,
): Promise<Answer | undefined> {
  const missing: Answer = { status: 404, body: { detail: 'Not Found' } };
  const match = /^([0-9a-f-]{36})\/(0|[1-9]\d{0,2})\.(jpeg|png)$/.exec(rest);
  const job = match ? ctx.sim.get(match[1]!) : undefined;
  const now = ctx.clock.now();
  if (!match || !job || !job.hasEndedAt(now) || !hasImages(job) || now >= cdnExpiresAt(ctx, job))
    return missing;
  const plan = imagePlans(job)[Number(match[2])];
  if (!plan || job.data.input?.outputFormat !== match[3]) return missing;
  const bytes = await renderPlan(ctx.images, job, plan);
  const { truncate_download_rate: truncateRate, slow_download_kbps: kbps } = ctx.config.faults;
  const truncate = truncateRate > 0 && ctx.random.downloads() < truncateRate;
  if (truncate && req.method !== 'HEAD') ctx.stats.fault('truncated_download');
  if (!truncate && req.method === 'GET') {
    res.once('finish', () => {
      const flags = ctx.downloaded.get(job.id) ?? new Array<boolean>(imagePlans(job).length).fill(false);
      flags[plan.index] = true;
      ctx.downloaded.set(job.id, flags);
    });
  }
  sendBytes(req, res, bytes, plan.contentType, { truncate, kbps }, ctx.clock);
  return undefined;
}
