// The progress display of `run` and `watch`. On a terminal it redraws a small frame in place with
// log-update (cursor movement, line erasing, wrapping to the terminal width, restoring the cursor
// on exit: all the ANSI handling a hand-written `\r\x1b[2K` gets wrong once a line wraps); when
// piped, or with --no-progress, it prints plain lines, only when something changed, at most every
// few seconds. Colour comes from picocolors, switched on only for a colour terminal and never
// under NO_COLOR (https://no-color.org), so a log file never holds escape codes.
import { createLogUpdate } from 'log-update';
import picocolors from 'picocolors';
import type { LiveProgress } from '../progress.js';
import { finishedItems } from '../../common/item-counts.js';
import { renderFrame, renderLine, type Colors, type ProgressView } from './frame.js';
import { RateTracker, type RateWindows } from './rates.js';

export interface DisplayStream {
  write(text: string): boolean;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
  on?(event: string, listener: () => void): unknown;
  off?(event: string, listener: () => void): unknown;
}

export interface DisplayOptions {
  stream: DisplayStream;
  /** False for --no-progress: plain lines even on a terminal. */
  live: boolean;
  env?: NodeJS.ProcessEnv;
  /** When the run started (epoch ms), for the elapsed time. */
  startedAt?: number;
  /** Plain mode: the least time between two lines, and the most (a heartbeat). */
  plainEveryMs?: number;
  plainHeartbeatMs?: number;
  windows?: RateWindows;
}

export interface ProgressDisplay {
  /** A new snapshot; `now` in epoch ms. */
  update(progress: LiveProgress, now: number): void;
  /** Leaves the last frame on screen (or prints the last line if it was not) and stops drawing. */
  finish(): void;
}

/** Colour on a colour terminal; NO_COLOR (non-empty) wins over everything, FORCE_COLOR over the rest. */
export function colorEnabled(stream: DisplayStream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '') return env.FORCE_COLOR !== '0';
  return stream.isTTY === true && env.TERM !== 'dumb';
}

/** Redrawing needs a terminal that understands cursor movement. */
export function canRedraw(stream: DisplayStream, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && env.TERM !== 'dumb';
}

export function createProgressDisplay(options: DisplayOptions): ProgressDisplay {
  const env = options.env ?? process.env;
  const tracker = new RateTracker(options.windows);
  const view = (progress: LiveProgress, now: number): ProgressView => {
    tracker.add({
      at: now,
      apiCalls: progress.apiCalls.submit + progress.apiCalls.lookup + progress.apiCalls.get,
      images: progress.images,
      finished: finishedItems(progress.counts),
    });
    const rates = tracker.rates(progress.run.itemCount - finishedItems(progress.counts));
    return {
      progress,
      rates,
      nowMs: now,
      ...(options.startedAt !== undefined ? { elapsedMs: now - options.startedAt } : {}),
    };
  };
  if (options.live && canRedraw(options.stream, env)) {
    return liveDisplay(options.stream, picocolors.createColors(colorEnabled(options.stream, env)), view);
  }
  return plainDisplay(options, view);
}

function liveDisplay(
  stream: DisplayStream,
  colors: Colors,
  view: (progress: LiveProgress, now: number) => ProgressView,
): ProgressDisplay {
  // log-update only needs write/columns/rows; it hides the cursor and restores it on exit.
  const draw = createLogUpdate(stream as NodeJS.WriteStream);
  let drawn = false;
  return {
    update(progress, now) {
      draw(renderFrame(view(progress, now), colors, stream.columns ?? Number.POSITIVE_INFINITY));
      drawn = true;
    },
    finish() {
      if (drawn) draw.done();
      drawn = false;
    },
  };
}

/** Plain lines (a log, CI) come at most this often, when something changed. */
export const PLAIN_LINE_EVERY_MS = 5_000;

function plainDisplay(
  options: DisplayOptions,
  view: (progress: LiveProgress, now: number) => ProgressView,
): ProgressDisplay {
  const every = options.plainEveryMs ?? PLAIN_LINE_EVERY_MS;
  const heartbeat = options.plainHeartbeatMs ?? 60_000;
  let printedAt: number | undefined;
  let printedKey = '';
  let pending: string | undefined;
  return {
    update(progress, now) {
      const line = renderLine(view(progress, now));
      // Rates change on every sample; only a change of state or counts is news.
      const retrying = progress.retrying && [progress.retrying.activity, progress.retrying.message];
      const key = JSON.stringify([progress.run.state, progress.run.reason, progress.counts, retrying]);
      const due =
        printedAt === undefined ||
        (key !== printedKey && now - printedAt >= every) ||
        now - printedAt >= heartbeat;
      if (due) {
        options.stream.write(`${line}\n`);
        printedAt = now;
        printedKey = key;
        pending = undefined;
      } else {
        pending = key !== printedKey ? line : undefined;
      }
    },
    finish() {
      if (pending !== undefined) options.stream.write(`${pending}\n`);
      pending = undefined;
    },
  };
}
