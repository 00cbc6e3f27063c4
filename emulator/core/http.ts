// Small node:http helpers for the emulators' routes: the request's path and query (absolute-form
// targets included), a size-capped strict-UTF-8 JSON body, and JSON/NDJSON answers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody } from '../../common/http-body.js';

/** The largest request body read (common/http-body.ts); bigger ones are `too_large`. */
export const MAX_BODY_BYTES = 1024 * 1024;

export type JsonBody =
  { kind: 'empty' } | { kind: 'too_large' } | { kind: 'invalid_json' } | { kind: 'json'; value: unknown };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Reads and parses the body; bytes that are not UTF-8 are invalid JSON, not silently replaced. */
export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<JsonBody> {
  const buffer = await readBody(req, limit);
  if (buffer === undefined) return { kind: 'too_large' };
  if (buffer.length === 0) return { kind: 'empty' };
  try {
    return { kind: 'json', value: JSON.parse(strictUtf8.decode(buffer)) as unknown };
  } catch {
    return { kind: 'invalid_json' };
  }
}

export interface RequestTarget {
  /** The raw path (percent-encoding kept), without the query. */
  path: string;
  query: URLSearchParams;
}

/** A server must accept the absolute form `http://host/path` too (RFC 9112 3.2.2). */
export function requestTarget(req: IncomingMessage): RequestTarget {
  let target = req.url ?? '/';
  if (!target.startsWith('/') && /^https?:\/\//i.test(target)) {
    try {
      const url = new URL(target);
      target = `${url.pathname}${url.search}`;
    } catch {
      // keep it as sent; it will not match a route
    }
  }
  const q = target.indexOf('?');
  return {
    path: q < 0 ? target : target.slice(0, q),
    query: new URLSearchParams(q < 0 ? '' : target.slice(q + 1)),
  };
}

/** A header's single value (repeated headers joined as node does for most). */
export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** Sends `json` as it is, valid JSON or not, with a content-length that matches it. */
export function sendJsonText(
  res: ServerResponse,
  status: number,
  json: string,
  headers?: Record<string, string>,
): void {
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}

/** Streams `lines` as NDJSON in chunks, respecting backpressure. */
export async function sendNdjson(res: ServerResponse, lines: Iterable<unknown>): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8' });
  let chunk = '';
  for (const line of lines) {
    chunk += `${JSON.stringify(line)}\n`;
    if (chunk.length >= 64 * 1024) {
      const flushed = res.write(chunk);
      chunk = '';
      if (!flushed)
        await new Promise<void>((resolve) => {
          const done = (): void => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.once('drain', done);
          res.once('close', done);
        });
      if (res.destroyed) return;
    }
  }
  res.end(chunk);
}
