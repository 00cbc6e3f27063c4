// Streams one result image from the result host. The host may be another origin than the
// API, so no credentials are sent there. The returned stream fails with a typed
// `ResultDownloadError` when the body stops short of its Content-Length, so a caller that
// stores the stream never keeps a truncated image believing it complete.
import { Transform, type Readable } from 'node:stream';
import { request, type Dispatcher } from 'undici';
import { codeOf, excerpt, parseRetryAfter } from './classify.js';
import {
  ResultDownloadError,
  ResultExpiredError,
  type ImageApiErrorDetails,
  type ResultDownloadErrorCode,
} from './errors.js';

export const RESULT_ENDPOINT = 'GET {result_url}';

export interface DownloadedResult {
  body: Readable;
  /** From Content-Length, when the host sent one; the stream errors if fewer bytes arrive. */
  contentLength?: number;
  contentType?: string;
}

export interface DownloadOptions {
  signal?: AbortSignal;
  userAgent: string;
  now: () => number;
  redact: (text: string) => string;
}

type Header = string | string[] | undefined;
const first = (value: Header) => (Array.isArray(value) ? value[0] : value);

function parseContentLength(value: Header): number | undefined {
  const text = first(value);
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}

export async function downloadResult(
  dispatcher: Dispatcher,
  url: string,
  options: DownloadOptions,
): Promise<DownloadedResult> {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  const details: ImageApiErrorDetails = { endpoint: RESULT_ENDPOINT };
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    const shown = excerpt(url, options.redact);
    throw new ResultDownloadError(
      'api_result_bad_url',
      false,
      `not an http(s) result URL: "${shown}"`,
      details,
    );
  }
  // Result URLs may be signed: the query string is a credential and stays out of messages.
  const target = `GET ${parsed.origin}${parsed.pathname}`;
  const fail = (code: ResultDownloadErrorCode, retryable: boolean, why: string, extra = {}) =>
    new ResultDownloadError(code, retryable, `${target} failed: ${why}`, { ...details, ...extra });

  const fromTransport = (error: unknown, received?: number, expected?: number) => {
    const code = codeOf(error) ?? 'unknown';
    if (
      code === 'UND_ERR_CONNECT_TIMEOUT' ||
      code === 'UND_ERR_HEADERS_TIMEOUT' ||
      code === 'UND_ERR_BODY_TIMEOUT'
    ) {
      return fail('api_result_timeout', true, `timed out (${code})`, { cause: error });
    }
    if (expected !== undefined && received !== undefined && received < expected) {
      return fail(
        'api_result_truncated',
        true,
        `body ended after ${received} of ${expected} bytes (${code})`,
        {
          cause: error,
        },
      );
    }
    const why = error instanceof Error ? excerpt(error.message, options.redact) : '';
    return fail('api_result_network_error', true, `network error ${code}${why ? ` (${why})` : ''}`, {
      cause: error,
    });
  };

  let response: Dispatcher.ResponseData;
  try {
    response = await request(parsed, {
      dispatcher,
      method: 'GET',
      headers: { 'user-agent': options.userAgent },
      signal: options.signal,
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw fromTransport(error);
  }

  const { statusCode, headers } = response;
  if (statusCode < 200 || statusCode >= 300) {
    // Drain (bounded) so that the keep-alive connection can be reused.
    await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    const extra: Partial<ImageApiErrorDetails> = { httpStatus: statusCode };
    const retryAfterMs = parseRetryAfter(headers['retry-after'], options.now());
    if (retryAfterMs !== undefined) extra.retryAfterMs = retryAfterMs;
    if (statusCode === 404 || statusCode === 410) {
      throw new ResultExpiredError(`${target} failed with ${statusCode}: result expired or gone`, {
        ...details,
        ...extra,
      });
    }
    const retryable = statusCode === 408 || statusCode === 429 || statusCode >= 500;
    throw fail('api_result_http_error', retryable, `HTTP ${statusCode}`, extra);
  }

  const contentLength = parseContentLength(headers['content-length']);
  let received = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      callback(null, chunk);
    },
    flush(callback) {
      if (contentLength !== undefined && received !== contentLength) {
        callback(
          fail('api_result_truncated', true, `body ended after ${received} of ${contentLength} bytes`),
        );
      } else {
        callback();
      }
    },
  });
  const source = response.body;
  source.on('error', (error) => {
    counted.destroy(options.signal?.aborted ? error : fromTransport(error, received, contentLength));
  });
  // A consumer that stops reading early must release the socket too.
  counted.on('close', () => {
    if (!source.destroyed) source.destroy();
  });
  source.pipe(counted);

  const result: DownloadedResult = { body: counted };
  if (contentLength !== undefined) result.contentLength = contentLength;
  const contentType = first(headers['content-type']);
  if (contentType !== undefined) result.contentType = contentType;
  return result;
}
