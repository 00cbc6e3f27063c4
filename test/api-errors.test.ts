// Unit tests of the client's error classification: status mapping, Retry-After parsing,
// excerpts and redaction, summaries. No network.
import { describe, expect, it } from 'vitest';
import { errorFromStatus, errorFromTransport, excerpt, parseRetryAfter } from '../api/classify.js';
import {
  AuthenticationError,
  BadRequestError,
  ImageApiError,
  InsufficientCreditsError,
  NetworkError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ResultExpiredError,
  ServerError,
  TimeoutError,
  toFailureDetails,
} from '../api/index.js';

const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);
const ctx = {
  endpoint: 'POST /v1/images/generations',
  target: 'POST /v1/images/generations',
  redact: (text: string) => text.split('sk-secret').join('[redacted]'),
  now: () => NOW,
};
const envelope = (code: string, message: string) =>
  JSON.stringify({ error: { type: 'invalid_request_error', code, message } });

describe('parseRetryAfter', () => {
  it('reads delta-seconds, including fractions', () => {
    expect(parseRetryAfter('3', NOW)).toBe(3000);
    expect(parseRetryAfter(' 0.5 ', NOW)).toBe(500);
    expect(parseRetryAfter(['2', '9'], NOW)).toBe(2000);
  });

  it('reads an HTTP-date relative to the injected clock, never negative', () => {
    expect(parseRetryAfter(new Date(NOW + 7000).toUTCString(), NOW)).toBe(7000);
    expect(parseRetryAfter(new Date(NOW - 7000).toUTCString(), NOW)).toBe(0);
  });

  it('ignores absent and garbage values', () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter('soon', NOW)).toBeUndefined();
    expect(parseRetryAfter('-4', NOW)).toBeUndefined();
  });
});

describe('errorFromStatus', () => {
  const cases = [
    [400, BadRequestError, 'api_bad_request', false],
    [401, AuthenticationError, 'api_authentication_failed', false],
    [402, InsufficientCreditsError, 'api_insufficient_credits', false],
    [403, PermissionDeniedError, 'api_permission_denied', false],
    [404, NotFoundError, 'api_not_found', false],
    [408, TimeoutError, 'api_timeout', true],
    [429, RateLimitError, 'api_rate_limited', true],
    [500, ServerError, 'api_server_error', true],
    [503, ServerError, 'api_server_error', true],
  ] as const;

  it.each(cases)('maps %i to its class, code and retryability', (status, cls, code, retryable) => {
    const error = errorFromStatus(ctx, status, {}, envelope('some_code', 'went wrong'));
    expect(error).toBeInstanceOf(cls);
    expect(error).toBeInstanceOf(ImageApiError);
    expect(error.name).toBe(cls.name);
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(retryable);
    expect(error.httpStatus).toBe(status);
    expect(error.apiCode).toBe('some_code');
    expect(error.apiType).toBe('invalid_request_error');
    expect(error.endpoint).toBe('POST /v1/images/generations');
  });

  it('treats unexpected 4xx as a generic non-retryable error', () => {
    const error = errorFromStatus(ctx, 418, {}, 'teapot');
    expect(error.constructor).toBe(ImageApiError);
    expect(error.code).toBe('api_unexpected_status');
    expect(error.retryable).toBe(false);
  });

  it('writes a one-line message from the envelope', () => {
    const error = errorFromStatus(ctx, 400, {}, envelope('invalid_size', 'size "7:3" is not supported'));
    expect(error.message).toBe(
      'POST /v1/images/generations failed with 400 invalid_size: size "7:3" is not supported',
    );
  });

  it('keeps task_expired distinguishable from task_not_found', () => {
    expect(errorFromStatus(ctx, 404, {}, envelope('task_expired', 'gone')).apiCode).toBe('task_expired');
    expect(errorFromStatus(ctx, 404, {}, envelope('task_not_found', 'no')).apiCode).toBe('task_not_found');
  });

  it('carries Retry-After as data on 429 and 5xx', () => {
    expect(
      errorFromStatus(ctx, 429, { 'retry-after': '2' }, envelope('rate_limit_exceeded', 'x')).retryAfterMs,
    ).toBe(2000);
    expect(errorFromStatus(ctx, 503, { 'retry-after': '1' }, '').retryAfterMs).toBe(1000);
    expect(errorFromStatus(ctx, 429, {}, '').retryAfterMs).toBeUndefined();
  });

  it('excerpts a non-envelope body to one short line', () => {
    const html = `<html>\n<body>\n${'Bad gateway '.repeat(100)}</body></html>`;
    const error = errorFromStatus(ctx, 502, {}, html);
    expect(error).toBeInstanceOf(ServerError);
    expect(error.message).not.toContain('\n');
    expect(error.message.length).toBeLessThan(300);
    expect(error.message).toMatch(
      /^POST \/v1\/images\/generations failed with 502: <html> <body> Bad gateway/,
    );
  });

  it('redacts a key the server echoes', () => {
    const error = errorFromStatus(ctx, 401, {}, envelope('invalid_api_key', 'Incorrect API key: sk-secret'));
    expect(error.message).not.toContain('sk-secret');
    expect(error.message).toContain('[redacted]');
  });
});

describe('errorFromTransport', () => {
  const undiciError = (code: string) => Object.assign(new Error(`boom ${code}`), { code });

  it('classifies timeouts and network failures as retryable', () => {
    expect(errorFromTransport(ctx, undiciError('UND_ERR_HEADERS_TIMEOUT'))).toBeInstanceOf(TimeoutError);
    expect(errorFromTransport(ctx, undiciError('UND_ERR_CONNECT_TIMEOUT'))).toBeInstanceOf(TimeoutError);
    const refused = errorFromTransport(ctx, undiciError('ECONNREFUSED'));
    expect(refused).toBeInstanceOf(NetworkError);
    expect(refused.retryable).toBe(true);
    expect(refused.message).toContain('ECONNREFUSED');
  });

  it('says whether the server may have acted on the request', () => {
    expect(errorFromTransport(ctx, undiciError('ECONNREFUSED')).outcomeUnknown).toBe(false);
    expect(errorFromTransport(ctx, undiciError('UND_ERR_CONNECT_TIMEOUT')).outcomeUnknown).toBe(false);
    expect(errorFromTransport(ctx, undiciError('ECONNRESET')).outcomeUnknown).toBe(true);
    expect(errorFromTransport(ctx, undiciError('UND_ERR_HEADERS_TIMEOUT')).outcomeUnknown).toBe(true);
  });

  it('reads the code of an AggregateError from a multi-address connect', () => {
    const aggregate = new AggregateError([undiciError('ECONNREFUSED'), undiciError('ECONNREFUSED')], 'x');
    expect(errorFromTransport(ctx, aggregate).message).toContain('ECONNREFUSED');
  });

  it('does not retry on a closed client', () => {
    const error = errorFromTransport(ctx, undiciError('UND_ERR_DESTROYED'));
    expect(error.code).toBe('api_client_closed');
    expect(error.retryable).toBe(false);
  });
});

describe('excerpt', () => {
  it('truncates to about 200 characters and strips control characters', () => {
    const text = excerpt(`a\u0000b\r\n${'x'.repeat(500)}`, (t) => t);
    expect(text.startsWith('a b ')).toBe(true);
    expect(text.length).toBe(201);
  });
});

describe('toFailureDetails', () => {
  it('summarises an API error as plain data', () => {
    const error = errorFromStatus(
      ctx,
      429,
      { 'retry-after': '3' },
      envelope('rate_limit_exceeded', 'slow down'),
    );
    const summary = toFailureDetails(error);
    expect(summary).toEqual({
      type: 'RateLimitError',
      code: 'api_rate_limited',
      message: 'POST /v1/images/generations failed with 429 rate_limit_exceeded: slow down',
      retryable: true,
      retryAfterMs: 3000,
    });
    expect(JSON.parse(JSON.stringify(summary))).toEqual(summary);
  });

  it('keeps the subclass name of download errors', () => {
    const summary = toFailureDetails(
      new ResultExpiredError('gone', { endpoint: 'GET {result_url}', httpStatus: 410 }),
    );
    expect(summary).toMatchObject({
      type: 'ResultExpiredError',
      code: 'api_result_expired',
      retryable: false,
    });
    expect(summary).not.toHaveProperty('retryAfterMs');
  });

  it('summarises foreign errors and non-errors', () => {
    expect(toFailureDetails(Object.assign(new Error('disk full'), { code: 'ENOSPC' }))).toEqual({
      type: 'Error',
      code: 'ENOSPC',
      message: 'disk full',
      retryable: true,
    });
    expect(toFailureDetails('weird')).toMatchObject({ code: 'unexpected_error', message: 'weird' });
  });
});
