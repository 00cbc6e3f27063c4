// get_result's answer (OpenAPI `ResultResponse`): `{id, status, result, progress, details,
// preview}` with status one of "Task not found", "Pending", "Request Moderated", "Content
// Moderated", "Ready", "Error" (`StatusResponse`). FastAPI serializes every field of the response
// model, so the nulls are present, not left out.
//
// When Ready, `result` is `{sample, prompt, seed, start_time, end_time, duration}` (times in
// seconds since the epoch, as BFL reports them); `sample` is the signed delivery URL. The
// `details` of moderated tasks name a reason as BFL's answers do (`Moderation Reasons`).
import type { BflJob } from './tasks.js';

export const BFL_STATUSES = [
  'Task not found',
  'Pending',
  'Request Moderated',
  'Content Moderated',
  'Ready',
  'Error',
] as const;
export type BflStatus = (typeof BFL_STATUSES)[number];

export interface ResultView {
  id: string;
  status: BflStatus;
  result: ReadyResult | null;
  progress: number | null;
  details: Record<string, unknown> | null;
  preview: null;
}

export interface ReadyResult {
  sample: string;
  prompt: string;
  seed: number;
  start_time: number;
  end_time: number;
  duration: number;
}

export function notFoundView(id: string): ResultView {
  return { id, status: 'Task not found', result: null, progress: null, details: null, preview: null };
}

/** The status of `job` at `now` in BFL's words (a deleted job is "Task not found"). */
export function statusOf(job: BflJob, now: number): BflStatus {
  switch (job.phaseAt(now)) {
    case 'queued':
    case 'running':
      return 'Pending';
    case 'succeeded':
      return 'Ready';
    case 'moderated':
      return job.data.moderation === 'request' ? 'Request Moderated' : 'Content Moderated';
    case 'deleted':
      return 'Task not found';
    default:
      // failed; cancelled and timed_out cannot happen here (no cancel, no start deadline).
      return 'Error';
  }
}

const seconds = (ms: number): number => ms / 1000;

/** The view of `job` at `now`; `sampleUrl` signs the delivery URL of a Ready one. */
export function resultView(job: BflJob, now: number, sampleUrl: () => string): ResultView {
  const status = statusOf(job, now);
  const view: ResultView = { id: job.id, status, result: null, progress: null, details: null, preview: null };
  switch (status) {
    case 'Pending':
      if (job.isRunningAt(now) && Number.isFinite(job.endsAt))
        view.progress = Math.floor(((now - job.startsAt) / (job.endsAt - job.startsAt)) * 100) / 100;
      else if (job.isRunningAt(now)) view.progress = 0;
      break;
    case 'Ready':
      view.result = {
        sample: sampleUrl(),
        prompt: job.data.prompt,
        seed: job.data.seed,
        start_time: seconds(job.startsAt),
        end_time: seconds(job.endsAt),
        duration: seconds(job.endsAt - job.startsAt),
      };
      break;
    case 'Request Moderated':
    case 'Content Moderated':
      view.details = {
        'Moderation Reasons': [status === 'Request Moderated' ? 'Input prompt' : 'Generated image'],
      };
      break;
    case 'Error':
      view.details = { error: 'Generation failed' };
      break;
    case 'Task not found':
      break;
  }
  return view;
}
