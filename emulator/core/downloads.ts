// Serving result bytes (an image on a provider's CDN or result host) with the faults real hosts
// show: a connection that drops part-way (truncate: about half the body, shorter than the declared
// content-length, so a correct client sees a premature close) and a slow link (kbps).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock, type Timer } from './clock.js';

export interface DownloadFaults {
  /** Send about half of the body, then drop the connection. */
  truncate: boolean;
  /** Kilobits per second (1 kbps = 125 bytes/s); 0 = unthrottled. */
  kbps: number;
}

/** Interval between throttled writes; each write carries the bytes that became due. */
const THROTTLE_TICK_MS = 20;

export function sendBytes(
  req: IncomingMessage,
  res: ServerResponse,
  bytes: Buffer,
  contentType: string,
  faults: DownloadFaults,
  clock: Clock = systemClock,
  headers: Record<string, string> = {},
): void {
  res.writeHead(200, { ...headers, 'content-type': contentType, 'content-length': bytes.length });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const body = faults.truncate ? bytes.subarray(0, Math.floor(bytes.length / 2)) : bytes;
  // A truncated body is cut once its prefix has reached the socket, so the client really gets it.
  const finish = (error?: Error | null): void => {
    if (faults.truncate || error) res.destroy();
    else res.end();
  };
  if (faults.kbps > 0) {
    // Headers go out at once, as on a slow link; node would otherwise hold them for the first byte.
    res.flushHeaders();
    throttle(res, body, faults.kbps * 125, clock, finish);
  } else res.write(body, finish);
}

/**
 * Writes `body` at `bytesPerSecond`, measured from the start so that timer lateness does not slow
 * the transfer down. Waits for 'drain' when the socket buffer is full, and stops (cancelling its
 * timer) as soon as the response closes, e.g. because the client went away.
 */
function throttle(
  res: ServerResponse,
  body: Buffer,
  bytesPerSecond: number,
  clock: Clock,
  done: (error?: Error | null) => void,
): void {
  const start = clock.now();
  let sent = 0;
  let timer: Timer | undefined;
  let closed = false;
  res.once('close', () => {
    closed = true;
    timer?.cancel();
  });
  const step = (): void => {
    timer = undefined;
    if (closed) return;
    const due = Math.min(body.length, Math.floor(((clock.now() - start) * bytesPerSecond) / 1000));
    if (due >= body.length) {
      res.write(body.subarray(sent), done);
      return;
    }
    let flushed = true;
    if (due > sent) {
      flushed = res.write(body.subarray(sent, due));
      sent = due;
    }
    if (flushed) timer = clock.setTimeout(step, THROTTLE_TICK_MS);
    else res.once('drain', step);
  };
  step();
}
