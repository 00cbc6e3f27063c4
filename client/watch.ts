// Following a run until it ends: the progress display while it runs (client/display), a summary
// and an exit code at the end.
import {
  isGrpcDeadlineError,
  isGrpcServiceError,
  WorkflowFailedError,
  type Client,
} from '@temporalio/client';
import { UserError } from '../common/errors.js';
import type { CarryOverTotals, NotCompletedGroup, RunResult } from '../common/types.js';
import { plural } from '../common/words.js';
import { describeOutcome, finishedItems } from '../common/item-counts.js';
import { createProgressDisplay, PLAIN_LINE_EVERY_MS, type DisplayStream } from './display/display.js';
import { liveProgress, type LiveProgress } from './progress.js';
import { describeInFlight, onCtrlC } from './interrupt.js';
import type { LocalWorkers } from './local-workers.js';
import { exitCodeOf, withCurrentCounts, type RunHandle } from './runs.js';

export interface WatchOptions {
  /** Redraw in place when the stream is a terminal; false (--no-progress) prints plain lines. */
  tty: boolean;
  /** The workers of this process, if it runs some: a Ctrl-C lets them finish what they run. */
  workers?: LocalWorkers['inProcess'];
  /**
   * Time between two progress samples; rates are measured across them. Default: a second when
   * redrawn in place, the plain lines' own spacing otherwise (each sample queries the run and each
   * running shard, work for the workers and the server that no line would show).
   */
  intervalMs?: number;
  /** Where the display goes; default stderr (stdout stays for results). */
  stream?: DisplayStream;
}

/** The root cause's message: activity failures wrap the interesting one. */
export function rootMessage(error: unknown): string {
  let current: unknown = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

/** `2 failed content_policy_violation/content_blocked: sku-1, sku-7`, a line per kind. */
function notCompletedLines(groups: readonly NotCompletedGroup[]): string[] {
  return groups.map((group) => {
    const more = group.count > group.ids.length ? ', ...' : '';
    return `pixelmill:   ${group.count} ${group.status} ${group.type}/${group.code}: ${group.ids.join(', ')}${more}`;
  });
}

function describeCarryOver(carried: CarryOverTotals): string {
  return (
    `pixelmill: carried over from earlier runs: ${carried.reused} of ${plural(carried.items, 'unchanged item')}, nothing charged ` +
    `(${carried.restored} fetched again, ${carried.moved} copied to new paths, ${carried.regenerated} generated after all)`
  );
}

export function describeResult(result: RunResult): string {
  const { counts } = result;
  const itemCount = finishedItems(counts);
  const groups = result.notCompleted ?? [];
  return [
    `pixelmill: ${result.name}: ${result.outcome ?? describeOutcome(counts, itemCount, result.creditsSpent)}; ` +
      `${plural(result.images, 'image')} stored`,
    ...(groups.length
      ? ['pixelmill: not completed, by status and error type/code:', ...notCompletedLines(groups)]
      : []),
    ...(result.carryOver ? [describeCarryOver(result.carryOver)] : []),
    `pixelmill: API calls: ${result.apiCalls.submit} submit, ${result.apiCalls.lookup} lookup, ${result.apiCalls.get} get`,
    `pixelmill: report ${result.reportFile}`,
    ...(result.galleryFile !== undefined ? [`pixelmill: gallery ${result.galleryFile}`] : []),
  ].join('\n');
}

/** gRPC's FAILED_PRECONDITION: the server's "no poller seen for task queue recently". */
const FAILED_PRECONDITION = 9;

/** A query failed because no worker polls the run's task queue (or none answered in time). */
function noWorkerAnswers(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return (
    isGrpcDeadlineError(error) ||
    isGrpcDeadlineError(cause) ||
    (isGrpcServiceError(cause) && cause.code === FAILED_PRECONDITION)
  );
}

/** The last frame shows the run's result, not the sample taken a moment before it ended. */
function finalProgress(last: LiveProgress, result: RunResult): LiveProgress {
  return {
    run: { ...last.run, state: 'finished', runningShards: [] },
    counts: result.counts,
    creditsSpent: result.creditsSpent,
    images: result.images,
    apiCalls: result.apiCalls,
    // A batch run's last line says its batches, ended, as its running lines did.
    ...(last.batches ? { batches: result.batches ?? { ...last.batches, inFlight: 0 } } : {}),
  };
}

/** What to do after leaving a run early: the same words on a terminal and in a log. */
export function resumeHint(runId: string): string {
  return `pixelmill: stopped following ${runId}; it is durable: run the same command again to resume it`;
}

/** The live display's refresh. */
const LIVE_SAMPLE_MS = 1_000;

export async function watchRun(client: Client, handle: RunHandle, options: WatchOptions): Promise<number> {
  const out = options.stream ?? process.stderr;
  const interval = options.intervalMs ?? (options.tty ? LIVE_SAMPLE_MS : PLAIN_LINE_EVERY_MS);
  const startedAt = await handle.describe().then(
    (description) => description.startTime.getTime(),
    () => undefined,
  );
  const display = createProgressDisplay({
    stream: out,
    live: options.tty,
    ...(startedAt !== undefined ? { startedAt } : {}),
  });
  let stop = false;
  let last: LiveProgress | undefined;
  let warned = false;
  let wake = (): void => undefined;
  const ticker = (async () => {
    while (!stop) {
      // A query that cannot be answered right now (no worker yet) only skips this sample.
      let unanswered = false;
      const progress = await liveProgress(client, handle.workflowId, { deadlineMs: 10_000 }).catch(
        (error: unknown) => {
          unanswered = noWorkerAnswers(error);
          return undefined;
        },
      );
      if (progress && !stop) {
        display.update(progress, Date.now());
        last = progress;
      } else if (unanswered && !stop && !last && !warned) {
        warned = true;
        out.write(
          `pixelmill: no worker answers for ${handle.workflowId} yet (an embedded run moves on only while \`pixelmill run\` runs it)\n`,
        );
      }
      // Stopped while the query was out: no wait for a sample that will not come.
      if (stop) break;
      await new Promise<void>((resolve) => {
        // Every second until the run has a plan to show: its first line, and the last, drawn
        // from the last sample, must not wait for the plain lines' spacing.
        const planned = last !== undefined && last.run.state !== 'preparing';
        const timer = setTimeout(resolve, planned ? interval : Math.min(interval, LIVE_SAMPLE_MS));
        // Woken when the run ends: a timer left behind would hold the process up to 5 s more.
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();
  let tidyingUp = (): void => undefined;
  const interrupted = new Promise<'interrupted'>((resolve, reject) => {
    const { workers } = options;
    tidyingUp = onCtrlC({
      first() {
        if (!workers) return resolve('interrupted');
        // The frame drawn so far stays; the next ones draw below the message, not over it.
        display.finish();
        out.write(
          `\npixelmill: stopping: letting ${describeInFlight(workers.inFlight())} finish (cancelled after 10 s); Ctrl-C again to leave now\n`,
        );
        workers.interrupt();
      },
      again() {
        out.write(`\n${resumeHint(handle.workflowId)}\n`);
        process.exit(130);
      },
    });
    // Workers that fail (not only those stopped by a Ctrl-C) end the watch with their error.
    workers?.stopped.then(() => resolve('interrupted'), reject);
  });
  // Raced below; a failure after the run has ended must not crash the exit.
  interrupted.catch(() => undefined);
  const stopTicker = async (): Promise<void> => {
    stop = true;
    wake();
    await ticker;
  };
  try {
    const outcome = await Promise.race([handle.result().then(withCurrentCounts), interrupted]);
    await stopTicker();
    if (last && outcome !== 'interrupted') display.update(finalProgress(last, outcome), Date.now());
    display.finish();
    if (outcome === 'interrupted') {
      out.write(`${resumeHint(handle.workflowId)}\n`);
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
    tidyingUp();
    await stopTicker();
    display.finish();
  }
}
