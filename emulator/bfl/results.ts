// A task's result as the client receives it: the signed sample URL of a Ready task (signed once at
// the end, valid url_ttl_seconds from then; or, with sample.resign_on_poll, signed afresh for each
// answer), and the webhook sent when a task with a webhook_url ends.
import type { BflContext } from './context.js';
import type { BflJob } from './tasks.js';
import { resultView, type ResultView } from './views.js';
import { signatureHeaders, webhookBody } from './webhook-body.js';

/** How long a sample URL lives, in clock milliseconds. */
export function sampleTtlMs(ctx: BflContext): number {
  return ctx.config.sample.url_ttl_seconds * 1000 * ctx.config.time_scale;
}

/** The expiry of a URL signed for `job` at `now`. */
function expiryFor(ctx: BflContext, job: BflJob, now: number): number {
  if (!ctx.config.sample.resign_on_poll) return job.endsAt + sampleTtlMs(ctx);
  const expiresAt = now + sampleTtlMs(ctx);
  const last = ctx.samples.lastExpiry.get(job.id) ?? 0;
  if (expiresAt > last) ctx.samples.lastExpiry.set(job.id, expiresAt);
  return expiresAt;
}

/** When the newest URL handed out for `job` stops working (for "expired before downloaded"). */
export function sampleExpiresAt(ctx: BflContext, job: BflJob): number {
  return ctx.samples.lastExpiry.get(job.id) ?? job.endsAt + sampleTtlMs(ctx);
}

export function sampleUrl(ctx: BflContext, job: BflJob, now: number): string {
  return ctx.signer.url(ctx.urls.delivery, {
    taskId: job.id,
    format: job.data.format,
    expiresAt: expiryFor(ctx, job, now),
  });
}

export function viewOf(ctx: BflContext, job: BflJob, now: number): ResultView {
  return resultView(job, now, () => sampleUrl(ctx, job, now));
}

/** Sends the webhook of a job that has just ended (JobEndTimers call this once per job). */
export function fireWebhook(ctx: BflContext, job: BflJob): void {
  const url = job.record.webhook;
  if (url === null) return;
  const view = viewOf(ctx, job, job.endsAt);
  const body = webhookBody(view, ctx.config.webhooks.payload, job.endsAt);
  const secret = job.data.webhookSecret;
  const scheme = ctx.config.webhooks.signature;
  ctx.webhooks.send({ url, jobId: job.id, body, headers: () => signatureHeaders(body, secret, scheme) });
}
