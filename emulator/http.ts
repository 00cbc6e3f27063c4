// Small node:http helpers shared by the routes: JSON and NDJSON responses.
import type { ServerResponse } from 'node:http';

/** The largest request body the emulator reads (common/http-body.ts). */
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
