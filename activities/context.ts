// The running activity's context, for the code that heartbeats or honours cancellation.
import { Context } from '@temporalio/activity';

/** How often a running activity tells Temporal it is alive: well under the heartbeat timeouts
 * of workflows/activities.ts, so that a dead worker's activities are retried within seconds. */
export const LIVENESS_HEARTBEAT_MS = 3_000;

/** The running activity's context; undefined outside a worker (a script, a unit test). */
export function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    // Called outside a worker (a script, a unit test): no heartbeats, no cancellation.
    return undefined;
  }
}

/** The details each running activity last recorded with `recordDetails`. */
const recorded = new WeakMap<Context, { details: unknown }>();

/**
 * Heartbeats `details` now and keeps them for the liveness beats that follow, so that a beat
 * never replaces them with older ones (Temporal keeps the last beat's details for the next try).
 */
export function recordDetails(context: Context, details: unknown): void {
  recorded.set(context, { details });
  context.heartbeat(details);
}

/**
 * Runs `work`, heartbeating every LIVENESS_HEARTBEAT_MS until it settles, with `beat`, or with
 * the details last recorded (recordDetails), else those the earlier attempt left: a beat never
 * erases what an attempt carries forward. The first beat comes only after that interval: calls
 * that end sooner cost no RPC.
 */
export async function whileAlive<T>(work: () => Promise<T>, beat?: () => void): Promise<T> {
  const context = activityContext();
  if (!context) return work();
  const pulse = setInterval(beat ?? (() => beatNow(context)), LIVENESS_HEARTBEAT_MS);
  try {
    return await work();
  } finally {
    clearInterval(pulse);
  }
}

/** A heartbeat now, with the details last recorded (recordDetails), else those the earlier attempt left. */
export function beatNow(context: Context): void {
  context.heartbeat(recorded.has(context) ? recorded.get(context)!.details : context.info.heartbeatDetails);
}

/** The activity `fn`, heartbeating while it runs (see whileAlive). */
export function keptAlive<I, O>(fn: (input: I) => Promise<O>): (input: I) => Promise<O> {
  return (input) => whileAlive(() => fn(input));
}

/**
 * Where an activity's outcome lines go among its shard's (RunStateStore.appendOutcomes): by when
 * Temporal scheduled it, which orders a shard's activities as its workflow issued them whatever
 * the workers' clocks, then by attempt. Each attempt appends apart, never over another: an attempt
 * can run after a later one (its task held by a partition, delivered when it healed) and fail
 * part-way, and its lines, sorted first, must not replace what the attempt Temporal accepted wrote.
 */
export function appendSequence(context: Context | undefined): string | undefined {
  if (!context) return undefined;
  const { scheduledTimestampMs, activityId, workflowExecution, attempt } = context.info;
  return `${String(scheduledTimestampMs).padStart(15, '0')}-${workflowExecution?.runId ?? ''}-${activityId.padStart(8, '0')}-${String(attempt).padStart(4, '0')}`;
}
