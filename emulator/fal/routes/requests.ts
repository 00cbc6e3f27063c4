// The request routes under /{owner}/{app}/requests/{request_id} (no model sub-path): status
// (202 IN_QUEUE with queue_position or IN_PROGRESS, 200 COMPLETED, ?logs=1 adds runner logs), the
// status stream (server-sent events until COMPLETED), the result (the model's status and body, or
// its error; 400 while the request has not completed; 404 once its retention is over) and cancel
// (PUT: 202 CANCELLATION_REQUESTED, 400 ALREADY_COMPLETED, 404 NOT_FOUND). A request is visible
// only to the account that submitted it, and only under the app it was submitted to.
import type { ServerResponse } from 'node:http';
import type { Job } from '../../core/job.js';
import type { Timer } from '../../core/clock.js';
import type { FalContext, FalKey } from '../context.js';
import type { FalJobData } from '../job-data.js';
import { finishedAnswer } from '../results.js';
import { notFound, statusAnswer, type Answer } from '../wire.js';

/** How often an open status stream looks for a change, in emulated seconds. */
const STREAM_TICK_SECONDS = 0.5;
/** ... but never more often than this, in clock milliseconds. */
const STREAM_MIN_TICK_MS = 20;

export function findRequest(
  ctx: FalContext,
  key: FalKey,
  app: string,
  id: string,
): Job<FalJobData> | undefined {
  const job = ctx.sim.get(id);
  return job && job.account === key.account && job.data.app === app ? job : undefined;
}

export function handleStatus(
  ctx: FalContext,
  job: Job<FalJobData> | undefined,
  query: URLSearchParams,
): Answer {
  if (!job) return notFound();
  return statusAt(ctx, job, query, ctx.clock.now());
}

/** The status answer of `job` at `now`, as the status call and its stream give it. */
function statusAt(ctx: FalContext, job: Job<FalJobData>, query: URLSearchParams, now: number): Answer {
  return statusAnswer(
    ctx.base,
    job,
    now,
    wantsLogs(query),
    () => ctx.sim.queuePosition(job, now),
    ctx.config.time_scale,
  );
}

function wantsLogs(query: URLSearchParams): boolean {
  return /^(1|true)$/i.test(query.get('logs') ?? '');
}

export async function handleResult(ctx: FalContext, job: Job<FalJobData> | undefined): Promise<Answer> {
  if (!job) return notFound();
  const now = ctx.clock.now();
  if (!job.hasEndedAt(now)) return { status: 400, body: { detail: 'Request is still in progress' } };
  if (job.phaseAt(now) === 'deleted') return notFound();
  const answer = await finishedAnswer(job, ctx.base, ctx.images, ctx.config.time_scale);
  job.resultFetchedAt ??= now;
  return { ...answer, headers: { 'x-fal-request-id': job.id, ...answer.headers } };
}

export function handleCancel(ctx: FalContext, job: Job<FalJobData> | undefined): Answer {
  if (!job) return { status: 404, body: { status: 'NOT_FOUND' } };
  const outcome = ctx.sim.cancel(job);
  if (outcome === 'already_ended') return { status: 400, body: { status: 'ALREADY_COMPLETED' } };
  ctx.stats.fault(outcome === 'cancelled_running' ? 'cancelled_in_progress' : 'cancelled_in_queue');
  return { status: 202, body: { status: 'CANCELLATION_REQUESTED' } };
}

/**
 * GET .../status/stream: `data: <status JSON>` events, one per change, until COMPLETED; checked on
 * the emulator's clock, so a manual clock drives it in tests.
 */
export function handleStatusStream(
  ctx: FalContext,
  job: Job<FalJobData>,
  query: URLSearchParams,
  res: ServerResponse,
): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  ctx.streams.add(res);
  const tick = Math.max(STREAM_MIN_TICK_MS, STREAM_TICK_SECONDS * 1000 * ctx.config.time_scale);
  let last = '';
  let timer: Timer | undefined;
  const stop = (): void => {
    timer?.cancel();
    ctx.streams.delete(res);
  };
  res.once('close', stop);
  const step = (): void => {
    timer = undefined;
    if (res.destroyed) return;
    const now = ctx.clock.now();
    const { body } = statusAt(ctx, job, query, now);
    const text = JSON.stringify(body);
    if (text !== last) res.write(`data: ${text}\n\n`);
    last = text;
    if (job.hasEndedAt(now)) {
      stop();
      res.end();
      // A change is sent when it happens: the end at its moment, the rest at the next tick.
    } else timer = ctx.clock.setTimeout(step, Math.max(1, Math.min(tick, job.endsAt - now)));
  };
  step();
}
