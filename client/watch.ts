// Following a run until it ends: progress while it runs, a summary and an exit code at the end.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { UserError } from '../common/errors.js';
import type { RunResult } from '../common/types.js';
import { liveProgress, progressLine } from './progress.js';
import { exitCodeOf, type RunHandle } from './runs.js';

export interface WatchOptions {
  /** Redraw one line in place (a terminal) rather than print a line per change. */
  tty: boolean;
  /** Resolves when this process's workers stop (Ctrl-C): stop watching, the run lives on. */
  stopped?: Promise<void> | undefined;
  intervalMs?: number;
}

/** The root cause's message: activity failures wrap the interesting one. */
function rootMessage(error: unknown): string {
  let current: unknown = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

export function describeResult(result: RunResult): string {
  const { counts } = result;
  const notDone = [
    counts.failed && `${counts.failed} failed`,
    counts.expired && `${counts.expired} expired`,
    counts.cancelled && `${counts.cancelled} cancelled`,
    counts.skipped && `${counts.skipped} skipped`,
  ].filter(Boolean);
  return [
    `pixelmill: ${result.name}: ${counts.stored} items completed (${result.images} images)` +
      (notDone.length ? `, ${notDone.join(', ')}` : ''),
    `pixelmill: credits charged ${result.creditsSpent}; API calls: ${result.apiCalls.submit} submit, ${result.apiCalls.lookup} lookup, ${result.apiCalls.get} get`,
    `pixelmill: report ${result.reportFile}`,
  ].join('\n');
}

export async function watchRun(client: Client, handle: RunHandle, options: WatchOptions): Promise<number> {
  const out = process.stderr;
  const interval = options.intervalMs ?? (options.tty ? 1000 : 5000);
  let last = '';
  let stop = false;
  let wake = (): void => undefined;
  const ticker = (async () => {
    while (!stop) {
      const line = await liveProgress(client, handle.workflowId).then(progressLine, () => '');
      if (line && line !== last) {
        out.write(options.tty ? `\r\x1b[2K${line}` : `${line}\n`);
        last = line;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, interval);
      });
    }
  })();
  const interrupted = options.stopped?.then(() => 'interrupted' as const);
  const stopTicker = async (): Promise<void> => {
    stop = true;
    wake();
    await ticker;
  };
  try {
    const outcome = await Promise.race([handle.result(), ...(interrupted ? [interrupted] : [])]);
    await stopTicker();
    if (options.tty && last) out.write('\n');
    if (outcome === 'interrupted') {
      out.write(
        `pixelmill: stopped watching; ${handle.workflowId} is durable: run the same command again to resume it\n`,
      );
      return 130;
    }
    out.write(`${describeResult(outcome)}\n`);
    return exitCodeOf(outcome);
  } catch (error) {
    if (error instanceof WorkflowFailedError) {
      throw new UserError('run_failed', `run ${handle.workflowId} failed: ${rootMessage(error)}`);
    }
    throw error;
  } finally {
    await stopTicker();
  }
}
