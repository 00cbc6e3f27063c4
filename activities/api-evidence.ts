// What this worker has seen the API do: the evidence that tells a submit the API refuses for its
// own sake (a size the service cannot build, answered 500 build_request_failed) from an outage
// or a flaky stretch. A worker serves one API account, so what it sees is that account's.
//
// A submit the API answered k times with the same failure (5xx, network, garbled answers; a 429,
// or another failure now and then, neither counts nor breaks the count) is refused for its own
// sake when both hold:
// - the API takes submits right now: another submit was accepted since this one last failed;
//   or, when no other submit was tried since (a run's last items), a lookup of a task it accepted
//   lately (a probe) is answered. While other submits fail and none is accepted (an outage, of
//   the whole API or of submits alone), no item ever fails and the run waits;
// - k such failures would be a one-in-a-million accident at the failure share of the other
//   submits' attempts since this one was first tried: 5 tries while the API works or flakes a
//   little, more the more it fails the others (20 at one in two); ALONE_SUBMIT_TRIES when there
//   were no others to compare with.
// The count, what the others saw and a task to probe with travel from attempt to attempt in the
// heartbeat details, so a retry on another worker, or on a restarted one, decides the same.
import { ApplicationFailure } from '@temporalio/activity';
import { isImageApiError, RateLimitError } from '../api/index.js';
import { FailureType } from '../common/failure-types.js';
import type { CarriedSubmit } from '../common/types.js';
import { activityContext, recordDetails } from './context.js';
import { toActivityFailure } from './failures.js';

/** Never fewer tries than this: about 15 s with the retry interval below. */
export const MIN_SUBMIT_TRIES = 5;
/**
 * Tries when no other submit is there to compare with (a run's last items, a retry of refused
 * items alone), while the API answers lookups: the count the odds give at one failure in two,
 * about 15 minutes.
 */
export const ALONE_SUBMIT_TRIES = 20;
/** How unlikely k failures must be, at the others' failure share, to blame the item. */
export const BAD_LUCK_ODDS = 1e-6;
/** Outcomes kept: enough for the window of any submit still retrying at a busy account's rate. */
const OUTCOMES_KEPT = 20_000;
/** After the k-th failure, the next try comes 2^(k-1) s later, at most a minute. */
const MAX_RETRY_DELAY_MS = 60_000;

/** A failure that may heal by itself (5xx, network, a garbled answer); not a 429, which is the limit working. */
function transient(error: unknown): boolean {
  return isImageApiError(error) && error.retryable && !(error instanceof RateLimitError);
}

/** The others' failure share, smoothed (Laplace) so that a handful of answers proves little. */
export function othersFailureShare(accepted: number, failed: number): number {
  return (failed + 1) / (accepted + failed + 2);
}

/**
 * The same failures after which a submit is refused for its own sake, when `accepted` other
 * submits were accepted and `failed` failed since its first try; Infinity when none was accepted.
 */
export function triesToRefuse(accepted: number, failed: number): number {
  if (accepted === 0) return Number.POSITIVE_INFINITY;
  const share = othersFailureShare(accepted, failed);
  return Math.max(MIN_SUBMIT_TRIES, Math.ceil(Math.log(BAD_LUCK_ODDS) / Math.log(share)));
}

/**
 * The wait before the next try of a submit that failed `failures` times: the API retry policy's
 * doubling (workflows/activities.ts), counted in failures rather than attempts, so that 429s in
 * between do not stretch the tries that decide a refusal.
 */
export function retryDelayAfter(failures: number): number {
  return Math.min(MAX_RETRY_DELAY_MS, 1000 * 2 ** Math.max(0, failures - 1));
}

type CallKind = 'submit' | 'query';

interface Outcome {
  ms: number;
  /** The call (workflow and activity id) it belongs to. */
  call: string;
  kind: CallKind;
  ok: boolean;
}

/** The other submits' outcomes since a moment, leaving one submit's own out. */
export interface OthersSeen {
  accepted: number;
  failed: number;
}

export class ApiEvidence {
  #outcomes: Outcome[] = [];
  /** The last task a submit got, for a probe to look up. */
  lastTaskId: string | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  /** A call the API answered as asked (a submit accepted, a lookup or GET answered). */
  succeeded(kind: CallKind, call = currentCall()): void {
    this.#note({ ms: this.now(), call, kind, ok: true });
  }

  /** Notes `error` when it is transient: during an outage every call sees one. */
  failed(kind: CallKind, error: unknown, call = currentCall()): void {
    if (transient(error)) this.#note({ ms: this.now(), call, kind, ok: false });
  }

  /** The other submits' outcomes from `sinceMs` on. */
  /** The other submits' outcomes from `sinceMs` on, every attempt counted. */
  submitsSince(sinceMs: number, call: string): OthersSeen {
    const seen = { accepted: 0, failed: 0 };
    this.#since(sinceMs, call, (outcome) => {
      if (outcome.kind !== 'submit') return;
      if (outcome.ok) seen.accepted++;
      else seen.failed++;
    });
    return seen;
  }

  #since(sinceMs: number, call: string, visit: (outcome: Outcome) => void): void {
    for (let k = this.#outcomes.length - 1; k >= 0; k--) {
      const outcome = this.#outcomes[k]!;
      if (outcome.ms < sinceMs) return;
      if (outcome.call !== call) visit(outcome);
    }
  }

  #note(outcome: Outcome): void {
    this.#outcomes.push(outcome);
    if (this.#outcomes.length > 2 * OUTCOMES_KEPT) this.#outcomes = this.#outcomes.slice(-OUTCOMES_KEPT);
  }
}

/** The running call's identity: activity ids repeat across workflows. */
function currentCall(): string {
  const info = activityContext()?.info;
  return info ? callName(info.activityId) : '';
}

/** The identity of call `activityId` of the running activity's workflow. */
export function callName(activityId: string): string {
  const info = activityContext()?.info;
  return `${info?.workflowExecution?.workflowId ?? info?.workflowType ?? ''}/${activityId}`;
}

/** Whether the API answers a lookup of `taskId`, a task it accepted lately (none: no evidence). */
async function answersProbe(
  evidence: ApiEvidence,
  taskId: string | undefined,
  probe: (taskId: string) => Promise<unknown>,
): Promise<boolean> {
  if (taskId === undefined) return false;
  const call = `${currentCall()}/probe`;
  try {
    await probe(taskId);
  } catch (error) {
    evidence.failed('query', error, call);
    return false;
  }
  evidence.succeeded('query', call);
  return true;
}

/**
 * What a submit's attempts carry to the next one in their heartbeat details (flushed when an
 * attempt fails), so that the evidence survives the attempt's move to another worker, or a
 * worker restarted with an empty memory.
 */
interface SubmitHeartbeat {
  /** Transient failures so far, by answer (`500 build_request_failed`): the repeated one decides. */
  answers: Record<string, number>;
  /** When the last of them happened (epoch ms). */
  lastFailedAtMs: number;
  /** The other submits seen since the first try, by whichever worker saw more of them. */
  others: OthersSeen;
  /** A task the API accepted lately, for a probe. */
  probeTaskId?: string;
}

/**
 * What the earlier attempts of this submit saw (on whichever worker); before its first failure,
 * what the slice it carries on saw (its one failed try).
 */
function earlierAttempts(carried: CarriedSubmit | undefined): SubmitHeartbeat {
  const details = activityContext()?.info.heartbeatDetails as Partial<SubmitHeartbeat> | undefined;
  const first = details === undefined && carried !== undefined;
  return {
    answers: details?.answers ?? (first ? { [carried.answer]: 1 } : {}),
    lastFailedAtMs: details?.lastFailedAtMs ?? (first ? carried.triedAt : Number.POSITIVE_INFINITY),
    others: details?.others ?? { accepted: 0, failed: 0 },
    ...(details?.probeTaskId !== undefined ? { probeTaskId: details.probeTaskId } : {}),
  };
}

const seen = (others: OthersSeen): number => others.accepted + others.failed;

/** The answer a failure counts as: an occasional other 5xx in a refused streak is noise. */
export function answerOf(error: unknown): string {
  if (!isImageApiError(error)) return error instanceof Error ? error.name : 'error';
  return `${error.httpStatus ?? ''} ${error.apiCode ?? error.code}`.trim();
}

/**
 * The failure Temporal sees for a submit that failed with `error`: a non-retryable
 * `SubmitRefused` when the evidence says only this submit is refused; otherwise the API error
 * as classified (a 429 or an outage keeps retrying).
 */
export async function submitFailure(
  error: unknown,
  evidence: ApiEvidence,
  probe: (taskId: string) => Promise<unknown>,
  carried?: CarriedSubmit,
  shardTaskId?: string,
): Promise<unknown> {
  const context = activityContext();
  // A submit carrying on a slice's call is that call: its tries and its evidence since the slice.
  const call = carried ? callName(carried.call) : currentCall();
  evidence.failed('submit', error, call);
  if (!context || !isImageApiError(error)) return toActivityFailure(error);
  const earlier = earlierAttempts(carried);
  if (!transient(error)) {
    recordDetails(context, earlier);
    return toActivityFailure(error);
  }
  const { info } = context;
  const firstTriedAt = carried?.triedAt ?? info.scheduledTimestampMs;
  const mine = evidence.submitsSince(firstTriedAt, call);
  // A worker that has seen no submit accepted (started after the run's others) probes the shard's.
  const probeTaskId = evidence.lastTaskId ?? earlier.probeTaskId ?? shardTaskId;
  const answer = answerOf(error);
  const now: SubmitHeartbeat = {
    answers: { ...earlier.answers, [answer]: (earlier.answers[answer] ?? 0) + 1 },
    lastFailedAtMs: Date.now(),
    others: seen(mine) >= seen(earlier.others) ? mine : earlier.others,
    ...(probeTaskId !== undefined ? { probeTaskId } : {}),
  };
  recordDetails(context, now);
  const { others } = now;
  const same = now.answers[answer]!;
  const failures = Object.values(now.answers).reduce((sum, count) => sum + count, 0);
  // Since this submit last failed: other submits accepted (the API takes submits now), others
  // failing and none accepted (an outage of submits: never the item's fault), or no other
  // submit at all (then only a lookup can tell whether the API answers).
  const recent = evidence.submitsSince(earlier.lastFailedAtMs, call);
  const alone = recent.accepted === 0 && recent.failed === 0;
  const bound = others.accepted > 0 ? triesToRefuse(others.accepted, others.failed) : ALONE_SUBMIT_TRIES;
  const refused =
    same >= bound && (recent.accepted > 0 || (alone && (await answersProbe(evidence, probeTaskId, probe))));
  if (!refused) return toActivityFailure(error, retryDelayAfter(failures));
  const seconds = Math.round((Date.now() - firstTriedAt) / 1000);
  const message =
    `${error.message} (the same answer ${same} times in ${seconds} s, while the API ` +
    `accepted ${others.accepted} other submits and failed ${others.failed})`;
  return ApplicationFailure.create({
    type: FailureType.SubmitRefused,
    message,
    nonRetryable: true,
    details: [
      {
        type: FailureType.SubmitRefused,
        code: error.apiCode ?? error.code,
        message,
        ...(error.httpStatus !== undefined ? { httpStatus: error.httpStatus } : {}),
        ...(error.apiType !== undefined ? { apiType: error.apiType } : {}),
      },
    ],
  });
}
