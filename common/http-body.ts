// Reading a request body under a size limit, for the servers pixelmill runs (the emulator, the
// webhook receiver): a client must not make either buffer an unbounded body.
import type { IncomingMessage } from 'node:http';

/**
 * The request body, or `undefined` when it exceeds `limit` bytes. An oversized body is not read
 * to its end: the response then carries `connection: close` so the rest is never parsed as a
 * next request. A body cut off by the client resolves with what arrived (its JSON will not parse).
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
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
