// Serving a result image to a downloader, with the two faults real hosts show: a connection that
// drops part-way (truncate) and a slow link (kbps). The truncated body is shorter than the
// declared content-length, so a correct client sees a premature close, never a "complete" file.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock, type Timer } from '../core/clock.js';

export interface DownloadFaults {
  /** Send about half of the body, then drop the connection. */
  truncate: boolean;
  /** Throttle the body to this many kilobits per second (1 kbps = 125 bytes/s); 0 = unthrottled. */
  kbps: number;
}

/** Interval between throttled writes; each write carries the bytes that became due. */
const THROTTLE_TICK_MS = 20;

export function sendPng(
  req: IncomingMessage,
  res: ServerResponse,
  png: Buffer,
  faults: DownloadFaults,
  clock: Clock = systemClock,
): void {
  res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const body = faults.truncate ? png.subarray(0, Math.floor(png.length / 2)) : png;
  // A truncated body is cut only once its prefix has reached the socket (the write callback), so
  // the client really receives those bytes before the connection closes.
  const finish = (error?: Error | null): void => {
    if (faults.truncate || error) res.destroy();
    else res.end();
  };
  if (faults.kbps > 0) throttle(res, body, faults.kbps * 125, clock, finish);
  else res.write(body, finish);
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
