// The fal webhook of a finished request (`?fal_webhook=` on submit): POSTed at its end with
// `{request_id, gateway_request_id, status: OK|ERROR, payload, error, payload_error}` as Python
// writes JSON, signed (signing.ts), through the core dispatcher (timeouts, 10 retries over about
// 2 hours scaled by time_scale, duplicate and lost faults). The payload is the result's body; an
// error's `error` is "Invalid status code: <status>" and its payload the error body. Under the
// payload_error fault the payload is null and the client must fetch the result.
import type { Job } from '../core/job.js';
import type { FalContext } from './context.js';
import type { FalJobData } from './job-data.js';
import { finishedAnswer } from './results.js';
import { pythonJson } from './signing.js';

export const PAYLOAD_ERROR = 'Response payload could not be serialized to JSON';

export function sendWebhook(ctx: FalContext, job: Job<FalJobData>): void {
  const url = job.record.webhook;
  if (url === null) return;
  finishedAnswer(job, ctx.base, ctx.images, ctx.config.time_scale)
    .then((answer) => {
      const ok = answer.status >= 200 && answer.status < 300;
      const payloadError = job.data.webhookPayloadError;
      if (payloadError) ctx.stats.fault('webhook_payload_error');
      const body = pythonJson({
        request_id: job.id,
        gateway_request_id: job.data.gatewayRequestId,
        status: ok ? 'OK' : 'ERROR',
        payload: payloadError ? null : answer.body,
        error: ok ? null : `Invalid status code: ${answer.status}`,
        payload_error: payloadError ? PAYLOAD_ERROR : null,
      });
      const userId = ctx.userIds.get(job.account) ?? job.account;
      ctx.webhooks.send({
        url,
        jobId: job.id,
        body,
        headers: () => ctx.signer.headers(job.id, userId, Math.floor(ctx.clock.now() / 1000), body),
      });
    })
    .catch(() => ctx.stats.fault('webhook_render_failed'));
}
