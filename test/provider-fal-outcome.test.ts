// How fal's answers read as pixelmill's states: a model's output (images, flagged images, a status
// body asked too early), and the result call's error answers: the request's own outcome (model
// errors, request errors, the start timeout, moderation, cancel) told apart from a gateway's
// transient 5xx, which is left to the common classification (a retryable ServerError).
import { describe, expect, it } from 'vitest';
import { outputResult, resultAnswer, RESULT_RETENTION_MS } from '../providers/fal/outcome.js';
import { webhookResult } from '../providers/fal/webhook.js';

const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const IMAGE = (n: number) => ({
  url: `https://v3.fal.media/files/x/${n}.jpeg`,
  width: 1024,
  height: 1024,
  content_type: 'image/jpeg',
});
const json = (value: unknown) => JSON.stringify(value);

describe('a model output', () => {
  it('images are a completed result with their URLs, vouched for as long as fal keeps the result', () => {
    expect(
      outputResult({ images: [IMAGE(0), IMAGE(1)], seed: 4, has_nsfw_concepts: [false, false] }, NOW),
    ).toEqual({
      status: 'completed',
      urls: [IMAGE(0).url, IMAGE(1).url],
      expiresAt: NOW + RESULT_RETENTION_MS,
    });
    expect(RESULT_RETENTION_MS).toBe(6 * 60_000);
    expect(outputResult({ image: IMAGE(0) }, NOW)).toMatchObject({
      status: 'completed',
      urls: [IMAGE(0).url],
    });
  });

  it("images fal's safety checker flagged are a moderation failure, not a completion", () => {
    expect(outputResult({ images: [IMAGE(0), IMAGE(1)], has_nsfw_concepts: [false, true] }, NOW)).toEqual({
      status: 'failed',
      error: {
        type: 'content_policy_violation',
        code: 'has_nsfw_concepts',
        message: "fal's safety checker flagged 1 of 2 images (they come back black)",
      },
    });
  });

  it('a queue status body (the result asked too early) is the state; anything else is no result', () => {
    expect(outputResult({ status: 'IN_QUEUE', queue_position: 3 }, NOW)).toEqual({ status: 'pending' });
    expect(outputResult({ status: 'IN_PROGRESS' }, NOW)).toEqual({ status: 'processing' });
    expect(outputResult({ video: { url: 'x' } }, NOW)).toBeUndefined();
    expect(outputResult('text', NOW)).toBeUndefined();
  });
});

describe("the result call's error answers", () => {
  it('a result fal no longer keeps (404, 410) is gone', () => {
    expect(resultAnswer(404, {}, json({ detail: 'Request not found' }))).toEqual({ kind: 'gone' });
    expect(resultAnswer(410, {}, '')).toEqual({ kind: 'gone' });
  });

  it('auth, rate and timeout answers are left to the common classification', () => {
    for (const status of [401, 403, 408, 429])
      expect(resultAnswer(status, {}, json({ detail: 'x' }))).toBeUndefined();
  });

  it('a result asked before completion answers the state it is in', () => {
    expect(resultAnswer(400, {}, json({ detail: 'Request is still in progress' }))).toEqual({
      kind: 'state',
      status: 'processing',
    });
    expect(resultAnswer(400, {}, json({ detail: 'Request is in queue' }))).toEqual({
      kind: 'state',
      status: 'pending',
    });
  });

  it('the start timeout (504, X-Fal-Request-Timeout-Type: user) is task_timeout, code aborted', () => {
    const answer = resultAnswer(
      504,
      { 'x-fal-request-timeout-type': 'user' },
      json({ detail: 'Request timed out', error_type: 'request_timeout' }),
    );
    expect(answer).toEqual({
      kind: 'outcome',
      result: {
        status: 'failed',
        error: {
          type: 'task_timeout',
          code: 'aborted',
          message:
            'fal did not start the request within its X-Fal-Request-Timeout (limits.task_timeout): Request timed out',
        },
      },
    });
  });

  it('a model refusing the content (typed detail, NSFW text, error object) is content_policy_violation', () => {
    const typed = {
      detail: [
        {
          loc: ['body', 'prompt'],
          msg: 'The content could not be processed because it contained material flagged by a content checker.',
          type: 'content_policy_violation',
          url: 'https://docs.fal.ai/errors#content_policy_violation',
        },
      ],
    };
    expect(resultAnswer(422, {}, json(typed))).toEqual({
      kind: 'outcome',
      result: {
        status: 'failed',
        error: {
          type: 'content_policy_violation',
          code: 'content_policy_violation',
          message:
            'prompt: The content could not be processed because it contained material flagged by a content checker.',
        },
      },
    });
    expect(resultAnswer(400, {}, json({ detail: 'NSFW content detected in the output' }))).toMatchObject({
      result: { error: { type: 'content_policy_violation', code: 'content_policy_violation' } },
    });
    expect(
      resultAnswer(
        400,
        {},
        json({ detail: { error: 'content_policy_violation', message: 'refused: a public figure' } }),
      ),
    ).toMatchObject({
      result: {
        error: {
          type: 'content_policy_violation',
          code: 'content_policy_violation',
          message: 'refused: a public figure',
        },
      },
    });
  });

  it("a model's validation error is a generation_error with the issue's type and where it is", () => {
    const body = json({
      detail: [
        {
          loc: ['body', 'num_images'],
          msg: 'Input should be less than or equal to 4',
          type: 'less_than_equal',
        },
      ],
    });
    expect(resultAnswer(422, {}, body)).toEqual({
      kind: 'outcome',
      result: {
        status: 'failed',
        error: {
          type: 'generation_error',
          code: 'less_than_equal',
          message: 'num_images: Input should be less than or equal to 4',
        },
      },
    });
  });

  it("a 5xx fal's servers wrote about the request (X-Fal-Request-Id) is its outcome, whatever its body", () => {
    const fal = { 'x-fal-request-id': 'r1' };
    expect(
      resultAnswer(
        503,
        { ...fal, 'x-fal-error-type': 'runner_disconnected' },
        json({ detail: 'Runner disconnected', error_type: 'runner_disconnected' }),
      ),
    ).toEqual({
      kind: 'outcome',
      result: {
        status: 'failed',
        error: { type: 'generation_error', code: 'runner_disconnected', message: 'Runner disconnected' },
      },
    });
    expect(resultAnswer(500, fal, json({ detail: 'CUDA out of memory' }))).toMatchObject({
      kind: 'outcome',
      result: { error: { type: 'generation_error', code: 'http_500', message: 'CUDA out of memory' } },
    });
    expect(resultAnswer(502, fal, 'upstream died')).toMatchObject({
      kind: 'outcome',
      result: { error: { code: 'http_502', message: 'the model answered HTTP 502' } },
    });
  });

  it("a gateway's 5xx (no X-Fal-Request-Id) is not an outcome, even in fal's error shape: the call is retried", () => {
    expect(resultAnswer(502, {}, '<html><body><center>nginx</center></body></html>')).toBeUndefined();
    expect(resultAnswer(504, {}, '')).toBeUndefined();
    expect(resultAnswer(500, {}, json({ detail: 'Internal Server Error' }))).toBeUndefined();
    expect(
      resultAnswer(
        503,
        { 'x-fal-error-type': 'internal_error' },
        json({ detail: 'Service unavailable', error_type: 'internal_error' }),
      ),
    ).toBeUndefined();
  });

  it("a cancelled request is cancelled, its code fal's", () => {
    expect(
      resultAnswer(
        499,
        { 'x-fal-error-type': 'client_cancelled' },
        json({ detail: 'Request cancelled', error_type: 'client_cancelled' }),
      ),
    ).toEqual({
      kind: 'outcome',
      result: {
        status: 'failed',
        error: { type: 'cancelled', code: 'client_cancelled', message: 'Request cancelled' },
      },
    });
  });

  it('messages are one line, redacted, at most about 200 characters', () => {
    const answer = resultAnswer(
      422,
      {},
      json({ detail: `bad key fal-secret-key\n${'x'.repeat(500)}` }),
      (t) => t.split('fal-secret-key').join('[redacted]'),
    );
    expect(answer).toMatchObject({ kind: 'outcome' });
    const message = answer?.kind === 'outcome' ? (answer.result.error?.message ?? '') : '';
    expect(message).not.toContain('fal-secret-key');
    expect(message).not.toContain('\n');
    expect(message.length).toBeLessThanOrEqual(201);
  });
});

describe("a webhook body's result", () => {
  const hook = (fields: Record<string, unknown>) =>
    ({ request_id: 'r1', gateway_request_id: 'r1', ...fields }) as Parameters<typeof webhookResult>[0];

  it('OK with the payload is read as the result call is; without it (payload_error) the result is fetched', () => {
    expect(webhookResult(hook({ status: 'OK', payload: { images: [IMAGE(0)] } }), NOW)).toEqual({
      status: 'completed',
      urls: [IMAGE(0).url],
      expiresAt: NOW + RESULT_RETENTION_MS,
    });
    expect(
      webhookResult(hook({ status: 'OK', payload: null, payload_error: 'not JSON serializable' }), NOW),
    ).toEqual({
      status: 'completed',
    });
  });

  it('ERROR with its status and error body is the failure; a 504 or an unreadable one is fetched', () => {
    const refused = {
      detail: [{ loc: ['body', 'prompt'], msg: 'flagged', type: 'content_policy_violation' }],
    };
    expect(
      webhookResult(hook({ status: 'ERROR', error: 'Invalid status code: 422', payload: refused }), NOW),
    ).toEqual({
      status: 'failed',
      error: {
        type: 'content_policy_violation',
        code: 'content_policy_violation',
        message: 'prompt: flagged',
      },
    });
    expect(
      webhookResult(
        hook({
          status: 'ERROR',
          error: 'Invalid status code: 504',
          payload: { detail: 'Request timed out', error_type: 'request_timeout' },
        }),
        NOW,
      ),
    ).toEqual({ status: 'completed' });
    expect(webhookResult(hook({ status: 'ERROR', error: 'boom', payload: null }), NOW)).toEqual({
      status: 'completed',
    });
  });
});
