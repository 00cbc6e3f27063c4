// What a finished fal request answers: the model's output for a success (images on the emulated
// CDN, or data URIs with sync_mode; black images and has_nsfw_concepts for a flagged prompt when
// the model flags rather than refuses), or the model's or the platform's error. The result call
// and the webhook both use these; the size of the answer decides its retention (fal keeps results
// of 10 KB or more a shorter time).
import type { Job } from '../core/job.js';
import { CONTENT_TYPES, type ImageCache, type ImageFormat, type ImageLook } from '../core/images/render.js';
import type { FalJobData } from './job-data.js';
import { imageUrl, requestError, type Answer } from './wire.js';

export interface ImagePlan {
  index: number;
  /** What the answer declares. */
  width: number;
  height: number;
  contentType: string;
  /** What is really drawn and served (differs under the wrong_size and wrong_format faults). */
  drawnWidth: number;
  drawnHeight: number;
  format: ImageFormat;
  look: ImageLook;
}

/** Flagged images: all of a request's images when its prompt was flagged and the model flags. */
export function flagged(job: Job<FalJobData>): boolean {
  return job.outcome === 'moderated' && job.data.moderation === 'nsfw_flag';
}

/** Whether the request delivered images (a success, or a flagged one answered with black images). */
export function hasImages(job: Job<FalJobData>): boolean {
  return job.outcome === 'succeeded' || flagged(job);
}

export function imagePlans(job: Job<FalJobData>): ImagePlan[] {
  const input = job.data.input;
  if (!input) return [];
  const fault = job.data.imageFault;
  const other: ImageFormat = input.outputFormat === 'png' ? 'jpeg' : 'png';
  const [drawnWidth, drawnHeight] =
    fault === 'wrong_size'
      ? input.width === input.height
        ? [input.width, Math.max(1, Math.round((input.width * 9) / 16))]
        : [input.height, input.width]
      : [input.width, input.height];
  const look: ImageLook = flagged(job)
    ? 'black'
    : fault === 'blank'
      ? 'blank'
      : fault === 'corrupt'
        ? 'corrupt'
        : 'normal';
  return Array.from({ length: input.numImages }, (_, index) => ({
    index,
    width: input.width,
    height: input.height,
    contentType: CONTENT_TYPES[input.outputFormat],
    drawnWidth,
    drawnHeight,
    format: fault === 'wrong_format' ? other : input.outputFormat,
    look,
  }));
}

export function renderPlan(images: ImageCache, job: Job<FalJobData>, plan: ImagePlan): Promise<Buffer> {
  return images.get({
    prompt: job.data.input?.prompt ?? '',
    index: plan.index,
    width: plan.drawnWidth,
    height: plan.drawnHeight,
    format: plan.format,
    look: plan.look,
  });
}

/** The model's output: `urls[i]` is each image's URL (or data URI). */
export function outputBody(
  job: Job<FalJobData>,
  urls: readonly string[],
  timeScale: number,
): Record<string, unknown> {
  const plans = imagePlans(job);
  return {
    images: plans.map((plan) => ({
      url: urls[plan.index],
      width: plan.width,
      height: plan.height,
      content_type: plan.contentType,
    })),
    timings: { inference: Math.round(job.record.runMs / timeScale) / 1000 },
    seed: job.data.seed,
    has_nsfw_concepts: plans.map(() => flagged(job)),
    prompt: job.data.input?.prompt ?? '',
  };
}

const CONTENT_FLAGGED =
  'The content could not be processed because it contained material flagged by a content checker.';

/** The answer of a request that did not deliver images (status and body as the model or platform gives them). */
export function failureAnswer(job: Job<FalJobData>): Answer {
  const { data } = job;
  switch (job.outcome) {
    case 'moderated':
      return {
        status: 422,
        body: {
          detail: [
            {
              loc: ['body', 'prompt'],
              msg: CONTENT_FLAGGED,
              type: 'content_policy_violation',
              url: 'https://docs.fal.ai/errors#content_policy_violation',
              input: data.input?.prompt ?? '',
            },
          ],
        },
      };
    case 'failed':
      if (data.invalid) return { status: 422, body: { detail: data.invalid } };
      if (data.runnerUnavailable) return requestError(503, 'Runner unavailable', 'runner_connection_error');
      return requestError(500, 'Internal server error', 'runner_server_error');
    case 'cancelled':
      return requestError(499, 'Request cancelled', 'client_cancelled');
    case 'timed_out':
      return requestError(504, 'Request timed out', 'request_timeout', {
        'x-fal-request-timeout-type': 'user',
      });
    default:
      return requestError(500, 'Internal server error', 'internal_error');
  }
}

/** The full answer of a finished request; async because sync_mode inlines the image bytes. */
export async function finishedAnswer(
  job: Job<FalJobData>,
  base: string,
  images: ImageCache,
  timeScale: number,
): Promise<Answer> {
  if (!hasImages(job)) return failureAnswer(job);
  const plans = imagePlans(job);
  const urls = job.data.input?.syncMode
    ? await Promise.all(
        plans.map(
          async (plan) =>
            `data:${plan.contentType};base64,${(await renderPlan(images, job, plan)).toString('base64')}`,
        ),
      )
    : plans.map((plan) => imageUrl(base, job, plan.index));
  return { status: 200, body: outputBody(job, urls, timeScale) };
}

/**
 * Bytes of the result a request will have, known at submit: what decides between the two
 * retention periods. A sync_mode result inlines its images, always well over 10 KB.
 */
export function resultSizeEstimate(job: Job<FalJobData>, base: string, timeScale: number): number {
  if (!hasImages(job)) return JSON.stringify(failureAnswer(job).body).length;
  if (job.data.input?.syncMode) return Number.MAX_SAFE_INTEGER;
  const urls = imagePlans(job).map((plan) => imageUrl(base, job, plan.index));
  return Buffer.byteLength(JSON.stringify(outputBody(job, urls, timeScale)));
}
