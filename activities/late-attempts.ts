// An attempt of an activity can start after Temporal has given up on it. A partition between a
// worker and the frontend holds the answer to a long poll the frontend had already matched with a
// task; the attempt misses its heartbeats, Temporal times it out and runs the next attempt on
// another worker, and when the partition heals the held task reaches its worker, which starts it.
// Whatever such an attempt does happens beside (or after) the attempt Temporal now counts on: a
// submit would create a second task, billed. A late attempt asks first (confirmCurrent).
import { log, type Context } from '@temporalio/activity';
import { beatNow } from './context.js';

/**
 * Whether an attempt scheduled at `scheduledMs` and starting at `nowMs` may have been given up
 * already. Temporal times an attempt out when a heartbeat timeout passes without a heartbeat since
 * it started, so not before that long after it was scheduled; half of it, for clocks that disagree.
 * (Every activity that submits has a heartbeat timeout; without one, none is taken as late.)
 */
export function lateStart(
  nowMs: number,
  scheduledMs: number,
  heartbeatTimeoutMs: number | undefined,
): boolean {
  return heartbeatTimeoutMs !== undefined && nowMs - scheduledMs > heartbeatTimeoutMs / 2;
}

/** How long a late attempt waits for Temporal to answer its heartbeat: a round trip, with room. */
export const CONFIRM_WAIT_MS = 1_000;

/**
 * A heartbeat now, which Temporal answers NOT_FOUND for an attempt it has given up: the worker then
 * cancels it. Rejects with that cancellation; resolves when none came within CONFIRM_WAIT_MS (a
 * submit that waited long in its task queue, still Temporal's), which only a late attempt pays.
 */
export async function confirmCurrent(context: Context): Promise<void> {
  const lateS = Math.round((Date.now() - context.info.currentAttemptScheduledTimestampMs) / 1000);
  log.info(
    `this attempt started ${lateS} s after it was scheduled: asking Temporal whether it still counts on it`,
  );
  beatNow(context);
  await context.sleep(CONFIRM_WAIT_MS);
}
