// fal's queue wire shapes as the emulator answers them: the URLs of a request (on the emulator's
// own base, without the model's sub-path), the status bodies (IN_QUEUE with queue_position,
// IN_PROGRESS, COMPLETED with logs, metrics and, for a failed request, error and error_type), and
// the error bodies of the platform (`{detail, error_type}`, X-Fal-Error-Type).
import type { Job } from '../core/job.js';
import type { FalJobData } from './job-data.js';

/** An answer before it is written: status, JSON body, extra headers. */
export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface RequestUrls {
  request_id: string;
  response_url: string;
  status_url: string;
  cancel_url: string;
}

export function requestUrls(base: string, job: Job<FalJobData>): RequestUrls {
  const response = `${base}/${job.data.app}/requests/${job.id}`;
  return {
    request_id: job.id,
    response_url: response,
    status_url: `${response}/status`,
    cancel_url: `${response}/cancel`,
  };
}

export const CDN_PREFIX = '/media/files/';

export function imageUrl(base: string, job: Job<FalJobData>, index: number): string {
  return `${base}${CDN_PREFIX}${job.id}/${index}.${job.data.input?.outputFormat ?? 'jpeg'}`;
}

/** A platform (not model) error: `{detail, error_type}` and the same type in X-Fal-Error-Type. */
export function requestError(
  status: number,
  detail: string,
  errorType: string,
  headers: Record<string, string> = {},
): Answer {
  return {
    status,
    body: { detail, error_type: errorType },
    headers: { 'x-fal-error-type': errorType, ...headers },
  };
}

export const notFound = (): Answer => ({ status: 404, body: { detail: 'Request not found' } });

export interface LogLine {
  message: string;
  level: 'INFO' | 'ERROR';
  source: 'USER';
  timestamp: string;
}

/** Runner log lines seen by `now` (deterministic; they exist only once the request started). */
export function logsAt(job: Job<FalJobData>, now: number): LogLine[] {
  if (job.startsAt > now) return [];
  const line = (at: number, message: string, level: LogLine['level'] = 'INFO'): LogLine => ({
    message,
    level,
    source: 'USER',
    timestamp: new Date(at).toISOString(),
  });
  const images = job.data.input?.numImages ?? 0;
  const lines = [line(job.startsAt, `Generating ${images} image${images === 1 ? '' : 's'}`)];
  if (job.endsAt <= now)
    lines.push(
      job.outcome === 'succeeded'
        ? line(job.endsAt, 'Done')
        : line(job.endsAt, `Request ended: ${job.outcome}`, 'ERROR'),
    );
  return lines;
}

/** error and error_type of a COMPLETED status that did not succeed (fal's status carries both). */
export function completedError(job: Job<FalJobData>): { error: string; error_type: string } | undefined {
  switch (job.outcome) {
    case 'succeeded':
      return undefined;
    case 'moderated':
      return job.data.moderation === 'error'
        ? { error: 'Unprocessable Entity', error_type: 'content_policy_violation' }
        : undefined;
    case 'failed':
      if (job.data.invalid) return { error: 'Unprocessable Entity', error_type: 'validation_error' };
      if (job.data.runnerUnavailable)
        return { error: 'Runner unavailable', error_type: 'runner_connection_error' };
      return { error: 'Internal Server Error', error_type: 'runner_server_error' };
    case 'cancelled':
      return { error: 'Request cancelled', error_type: 'client_cancelled' };
    case 'timed_out':
      return { error: 'Request timed out', error_type: 'request_timeout' };
    case 'stuck':
      return undefined;
  }
}

/** GET .../status: 202 while queued or in progress, 200 once COMPLETED (a failure included). */
export function statusAnswer(
  base: string,
  job: Job<FalJobData>,
  now: number,
  withLogs: boolean,
  queuePosition: () => number,
  timeScale: number,
): Answer {
  const urls = requestUrls(base, job);
  if (job.isQueuedAt(now))
    return { status: 202, body: { status: 'IN_QUEUE', queue_position: queuePosition(), ...urls } };
  const logs = withLogs ? logsAt(job, now) : null;
  if (job.isRunningAt(now)) return { status: 202, body: { status: 'IN_PROGRESS', logs, ...urls } };
  const ran = Number.isFinite(job.startsAt);
  const inference = ran ? Math.round((job.endsAt - job.startsAt) / timeScale) / 1000 : null;
  return {
    status: 200,
    body: {
      status: 'COMPLETED',
      logs,
      metrics: { inference_time: inference },
      ...urls,
      ...completedError(job),
    },
  };
}
