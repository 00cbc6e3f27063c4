// Small node:http helpers shared by the routes: JSON responses, bounded body reading, NDJSON.
import type { IncomingMessage, ServerResponse } from 'node:http';

export const MAX_BODY_BYTES = 1024 * 1024;

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

/**
 * The request body, or `undefined` when it exceeds `limit` bytes. An oversized body is not read
 * to its end: the response then carries `connection: close` so the rest is never parsed as a
 * next request. A body cut off by the client resolves with what arrived (its JSON will not parse).
 */
export function readBody(req: IncomingMessage, limit: number = MAX_BODY_BYTES): Promise<Buffer | undefined> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length > limit) {
        cleanup();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length));
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onEnd);
      req.off('aborted', onEnd);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onEnd);
    req.on('aborted', onEnd);
  });
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
