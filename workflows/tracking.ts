// Pure rules of a shard: per-item phases, counting, the batch-lookup pacing, failure retries.
// Kept free of Temporal calls so that they read (and test) as plain functions.
import { isBatchLookupOutcome } from '../common/batch-lookup.js';
import type { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../common/failure-types.js';
import type { ErrorSummary, ItemCounts, ItemStatus, ShardCarriedState } from '../common/types.js';
import { formatDuration } from '../manifest/durations.js';
import { zeroApiCalls, zeroCounts } from '../common/item-counts.js';

/**
 * Where an item is; from `completed` on, its final status. Numbers, because a shard carries 500
 * of them across continue-as-new.
 */
export const Phase = {
  queued: 0,
  submitting: 1,
  submitted: 2,
  /** Finished at the API; results being fetched and stored. */
  storing: 3,
  completed: 4,
  failed: 5,
  cancelled: 6,
  expired: 7,
  skipped: 8,
} as const;
export type PhaseValue = (typeof Phase)[keyof typeof Phase];

export const FINAL_PHASE: Record<Exclude<ItemStatus, 'completed'>, PhaseValue> = {
  failed: Phase.failed,
  cancelled: Phase.cancelled,
  expired: Phase.expired,
  skipped: Phase.skipped,
};

export function isFinal(phase: number): boolean {
  return phase >= Phase.completed;
}

export function freshShardState(
  count: number,
  paused: boolean,
  cancelled: boolean,
  pollMs: number,
): ShardCarriedState {
  return {
    phase: new Array<number>(count).fill(Phase.queued),
    taskIds: new Array<string | null>(count).fill(null),
    attempts: new Array<number>(count).fill(0),
    credits: new Array<number>(count).fill(0),
    estimates: null,
    outcomes: [],
    apiCalls: zeroApiCalls(),
    images: 0,
    paused,
    cancelled,
    budgetStopped: false,
    pollMs,
  };
}

/** By phase; an item being submitted counts as queued until the API has accepted it. */
const COUNT_KEYS: (keyof ItemCounts)[] = [
  'queued',
  'queued',
  'submitted',
  'storing',
  'completed',
  'failed',
  'cancelled',
  'expired',
  'skipped',
];

/** Counts by phase; `processing` are the submitted items among `processing` (a lookup's word). */
export function countItems(
  phases: readonly number[],
  processing: ReadonlySet<number> = new Set(),
): ItemCounts {
  const counts = zeroCounts();
  phases.forEach((phase, index) => {
    if (phase === Phase.submitted && processing.has(index)) counts.processing++;
    else counts[COUNT_KEYS[phase] ?? 'queued']++;
  });
  return counts;
}

/**
 * Finished tasks one batch lookup should find while a shard is busy: a lookup per 100 images is
 * 0.01 API calls per image, half of the 0.02 per image that keeps a run within 2.02 calls per image.
 */
export const LOOKUP_YIELD = 100;

/**
 * How many finished tasks the next lookup should wait for. Lookups cost rate limit that submits and
 * GETs could use, so about LOOKUP_YIELD; but never more than half the shard's `max_in_flight`
 * share (a shard whose slots all wait for a lookup submits nothing), and in its tail (nothing left
 * to submit: `tailOut` tasks still out) half of what is left, so that its last few tasks do not
 * wait the maximum.
 */
export function lookupTarget(maxInFlight: number, tailOut?: number): number {
  const busy = Math.min(LOOKUP_YIELD, Math.ceil(maxInFlight / 2));
  return Math.max(1, tailOut === undefined ? busy : Math.min(busy, Math.ceil(tailOut / 2)));
}

/**
 * The next wait before a batch lookup: sized for it to find `target` finished tasks at the rate
 * the last one saw. It doubles while nothing finishes (the spec's exponential backoff) and moves
 * at most by a factor of two per lookup: one lookup's count is a noisy estimate of the rate.
 */
export function nextPollDelay(
  previousMs: number,
  finished: number,
  target: number,
  minMs: number,
  maxMs: number,
): number {
  const wanted = finished > 0 ? (previousMs * target) / finished : previousMs * 2;
  const damped = Math.min(previousMs * 2, Math.max(previousMs / 2, wanted));
  return Math.round(Math.min(maxMs, Math.max(minMs, damped)));
}

/**
 * With webhooks on, lookups only catch lost deliveries: the same pacing, this many times slower
 * (3 s to 30 s by default). A task whose delivery was lost (the receiver was down) waits at most
 * the slowest of these intervals: seconds next to a generation time of a minute.
 */
export const WEBHOOK_POLL_FACTOR = 3;

/** What tells a shard its tasks finished besides its lookups: webhooks, or the status streams workers follow. */
export interface PushedStates {
  webhookBaseUrl?: string;
  statusStreams?: boolean;
}

/** Finished tasks are pushed to the shard (a signal each), and lookups only catch what a push missed. */
export function finishesPushed(limits: PushedStates): boolean {
  return Boolean(limits.webhookBaseUrl) || limits.statusStreams === true;
}

/** The batch-lookup interval bounds of a shard: the run's, slowed down when finished tasks are pushed. */
export function pollBounds(limits: { pollMinMs: number; pollMaxMs: number } & PushedStates): {
  minMs: number;
  maxMs: number;
} {
  const factor = finishesPushed(limits) ? WEBHOOK_POLL_FACTOR : 1;
  return { minMs: limits.pollMinMs * factor, maxMs: limits.pollMaxMs * factor };
}

/** Batch-lookup outcomes that mean the task will never be collected. */
export function lostTaskError(status: string): ErrorSummary | undefined {
  if (!isBatchLookupOutcome(status)) return undefined;
  if (status === 'expired') {
    return {
      type: FailureType.TaskExpired,
      code: 'task_expired',
      message: 'the task expired before its results were fetched',
    };
  }
  return {
    type: FailureType.TaskLost,
    code: status,
    message: `the API no longer knows this task (${status})`,
  };
}

/** Why an item was not finished when the run's deadline passed (the report's error). */
export function deadlineError(deadlineAt: number): ErrorSummary {
  return {
    type: FailureType.DeadlinePassed,
    code: 'deadline',
    message: `the run's deadline (limits.deadline, ${new Date(deadlineAt).toISOString()}) passed before this item was finished`,
  };
}

/** Why a task still unfinished after `limits.task_timeout` was given up (the report's error). */
export function taskTimedOut(taskId: string | null, timeoutMs: number): ErrorSummary {
  return {
    type: FailureType.TaskTimedOut,
    code: 'task_timeout',
    message: `the API had not finished task ${taskId ?? '(unknown)'} after ${formatDuration(timeoutMs)} (limits.task_timeout); it was given up`,
  };
}

/**
 * The items whose task has been at the API longer than `timeoutMs` at `now`. An item whose
 * acceptance time is unknown (a run recorded before task timeouts) starts its clock now.
 */
export function overdueItems(
  phases: readonly number[],
  submittedAt: (number | null)[],
  now: number,
  timeoutMs: number,
): number[] {
  const overdue: number[] = [];
  phases.forEach((phase, index) => {
    if (phase !== Phase.submitted) return;
    const since = (submittedAt[index] ??= now);
    if (now - since > timeoutMs) overdue.push(index);
  });
  return overdue;
}

/**
 * When the first task at the API passes `timeoutMs`, for the lookup that will find it overdue;
 * Infinity when none is at the API or its acceptance time is unknown.
 */
export function firstOverdueAt(
  phases: readonly number[],
  submittedAt: readonly (number | null)[],
  timeoutMs: number,
): number {
  let first = Number.POSITIVE_INFINITY;
  phases.forEach((phase, index) => {
    const since = submittedAt[index];
    if (phase === Phase.submitted && since != null) first = Math.min(first, since + timeoutMs + 1);
  });
  return first;
}

/** Whether the manifest's retry policy resubmits a failed generation. */
export function shouldResubmit(
  error: ErrorSummary | undefined,
  attempts: number,
  retry: { maxAttempts: number; on: string[] },
): boolean {
  if (attempts >= retry.maxAttempts || !error) return false;
  return retry.on.includes(error.type) || retry.on.includes(error.code);
}

/** The typed failure an activity ended with, as the report's `{type, code, message}`. */
export function failureSummary(error: unknown): ErrorSummary {
  const cause = (error as ActivityFailure).cause as ApplicationFailure | undefined;
  const details = cause?.details?.[0] as Partial<ErrorSummary> | undefined;
  return {
    type: cause?.type ?? details?.type ?? FailureType.ActivityFailed,
    code: details?.code ?? cause?.type ?? 'activity_failed',
    message: details?.message ?? cause?.message ?? (error instanceof Error ? error.message : String(error)),
  };
}

/**
 * Why a submit's failure pauses the whole run instead of failing its item: the API refused the
 * account (a key refused, no access, no credits), which no item of the run can get past. Undefined
 * for failures of the item itself.
 */
export function accountRefusal(failure: ErrorSummary): string | undefined {
  switch (failure.type) {
    case FailureType.InsufficientCreditsError:
      return `the API answered 402 (insufficient credits): ${failure.message}; top up, then \`pixelmill resume\``;
    case FailureType.AuthenticationError:
      return (
        `the API refused the key (401): ${failure.message}; if it was disabled or expired, enable it ` +
        'and `pixelmill resume`; with a new key, start over with `--new-run` (nothing was charged for refused submits)'
      );
    case FailureType.PermissionDeniedError:
      return `the API refused this account access (403): ${failure.message}; fix its permissions, then \`pixelmill resume\``;
    default:
      return undefined;
  }
}
