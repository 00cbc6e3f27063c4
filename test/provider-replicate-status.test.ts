// How a Replicate prediction reads in pixelmill's words (status, result, failure type), and how its
// error answers are classified (429 waits read both ways, 422 as a bad request).
import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../api/classify.js';
import { BadRequestError, RateLimitError } from '../api/errors.js';
import { replicateErrorFor, waitFromBody } from '../providers/replicate/error-answers.js';
import { RESULT_RETENTION_MS, taskResultOf, taskStateOf } from '../providers/replicate/task-result.js';
import type { Prediction } from '../providers/replicate/wire.js';

const CREATED = '2026-11-26T10:00:00.123456Z';
const COMPLETED = '2026-11-26T10:00:04.5Z';
const URL_0 = 'https://replicate.delivery/xezq/abc/out-0.webp';
const URL_1 = 'https://replicate.delivery/xezq/def/out-1.webp';

function prediction(fields: Partial<Prediction>): Prediction {
  return { id: 'p1', status: 'starting', created_at: CREATED, ...fields };
}

describe('statuses', () => {
  it('starting is pending and processing is processing, without a result', () => {
    expect(taskStateOf(prediction({ status: 'starting', output: null }))).toEqual({ status: 'pending' });
    expect(taskStateOf(prediction({ status: 'processing', output: null }))).toEqual({ status: 'processing' });
  });

  it('succeeded is completed with its URLs, kept until completed_at + 1 hour', () => {
    const done = prediction({ status: 'succeeded', output: [URL_0, URL_1], completed_at: COMPLETED });
    const result = {
      status: 'completed',
      urls: [URL_0, URL_1],
      expiresAt: Date.parse(COMPLETED) + RESULT_RETENTION_MS,
    };
    expect(RESULT_RETENTION_MS).toBe(3_600_000);
    expect(taskResultOf(done)).toEqual(result);
    expect(taskStateOf(done)).toEqual({ status: 'completed', result });
  });

  it('takes a single URL output (flux-1.1-pro) as a list of one', () => {
    expect(
      taskResultOf(prediction({ status: 'succeeded', output: URL_0, completed_at: COMPLETED })),
    ).toMatchObject({
      status: 'completed',
      urls: [URL_0],
    });
  });

  it('a list entry without output is completed without a result (the GET collects it)', () => {
    expect(taskStateOf(prediction({ status: 'succeeded', completed_at: COMPLETED }))).toEqual({
      status: 'completed',
    });
  });

  it('succeeded with its output removed after the hour is expired', () => {
    for (const removed of [
      prediction({ status: 'succeeded', output: null, data_removed: true, completed_at: COMPLETED }),
      prediction({ status: 'succeeded', output: null, completed_at: COMPLETED }),
      prediction({ status: 'succeeded', output: [URL_0], data_removed: true, completed_at: COMPLETED }),
      prediction({ status: 'succeeded', data_removed: true, completed_at: COMPLETED }),
    ]) {
      expect(taskResultOf(removed)).toEqual({ status: 'expired' });
      expect(taskStateOf(removed)).toEqual({ status: 'expired', result: { status: 'expired' } });
    }
  });

  it('succeeded without any image URL is a generation failure, not a completion', () => {
    expect(taskResultOf(prediction({ status: 'succeeded', output: { text: 'hi' } }))).toEqual({
      status: 'failed',
      error: { type: 'generation_error', code: 'no_image_output', message: expect.any(String) },
    });
  });

  it('canceled is failed/cancelled and aborted is failed/task_timeout (aborted)', () => {
    expect(taskResultOf(prediction({ status: 'canceled' }))).toEqual({
      status: 'failed',
      error: { type: 'task_timeout', code: 'canceled', message: expect.stringContaining('canceled') },
    });
    expect(taskResultOf(prediction({ status: 'aborted' }))).toEqual({
      status: 'failed',
      error: { type: 'task_timeout', code: 'aborted', message: expect.stringContaining('Cancel-After') },
    });
  });

  it('an unknown status is carried as it came (not finished, for the shard)', () => {
    expect(taskStateOf(prediction({ status: 'queued_for_gpu' }))).toEqual({ status: 'queued_for_gpu' });
  });
});

describe('failures', () => {
  const failed = (error: string | null) => taskResultOf(prediction({ status: 'failed', error })).error;

  it('moderation is content_policy_violation', () => {
    for (const error of [
      'All generated images contained NSFW content. Try running it again with a different prompt.',
      'NSFW content detected. Try running it again, or try a different prompt.',
      'The input or output was flagged as sensitive. Please try again with different inputs. (E005)',
    ])
      expect(failed(error)?.type, error).toBe('content_policy_violation');
    expect(failed('The input or output was flagged as sensitive. (E005)')?.code).toBe('E005');
  });

  it('any other failure is generation_error, with the E-code when the error has one', () => {
    expect(failed('CUDA out of memory (E1001)')).toEqual({
      type: 'generation_error',
      code: 'E1001',
      message: 'CUDA out of memory (E1001)',
    });
    expect(failed('Prediction interrupted; please retry')).toMatchObject({
      type: 'generation_error',
      code: 'failed',
    });
    expect(failed(null)).toEqual({
      type: 'generation_error',
      code: 'failed',
      message: 'the prediction failed without an error message',
    });
  });
});

describe('error answers', () => {
  const ctx: RequestContext = {
    endpoint: 'POST /v1/predictions',
    target: 'POST /v1/predictions',
    redact: (text) => text,
    now: () => Date.UTC(2026, 10, 26),
  };
  const refine = replicateErrorFor(ctx);

  it('reads both wordings of a 429 detail, and a retry_after number', () => {
    expect(waitFromBody('{"detail":"Request was throttled. Expected available in 1 second."}')).toBe(1000);
    expect(waitFromBody('{"detail":"Request was throttled. Expected available in 12 seconds."}')).toBe(
      12_000,
    );
    expect(waitFromBody('{"detail":"Request was throttled. Your rate limit resets in ~30s."}')).toBe(30_000);
    expect(waitFromBody('{"detail":"throttled","retry_after":4}')).toBe(4000);
    expect(waitFromBody('{"detail":"Request was throttled."}')).toBeUndefined();
    expect(waitFromBody('not json')).toBeUndefined();
  });

  it('a 429 is a rate limit, waiting as Retry-After says, else as the detail says', () => {
    const body = '{"detail":"Request was throttled. Your rate limit resets in ~30s."}';
    const fromDetail = refine(429, {}, body);
    expect(fromDetail).toBeInstanceOf(RateLimitError);
    expect(fromDetail).toMatchObject({
      limit: 'rate',
      retryAfterMs: 30_000,
      retryable: true,
      httpStatus: 429,
    });
    expect(fromDetail?.message).toContain('rate limit resets');
    expect(refine(429, { 'retry-after': '2' }, body)).toMatchObject({ limit: 'rate', retryAfterMs: 2000 });
  });

  it('a 422 is a bad request; other statuses keep the common classification', () => {
    const refused = refine(
      422,
      {},
      '{"title":"Input validation failed","detail":"- input.aspect_ratio: bad\\n"}',
    );
    expect(refused).toBeInstanceOf(BadRequestError);
    expect(refused).toMatchObject({ retryable: false, httpStatus: 422 });
    expect(refine(404, {}, '{"detail":"Not found."}')).toBeUndefined();
    expect(refine(500, {}, 'oops')).toBeUndefined();
  });
});
