// submitSlice: a slice of a shard's queued items submitted in one activity, each in its turn at
// the run's rate (the rate gate grants the activity a token per call), instead of an activity per
// item: each activity costs a dispatch, history events and a workflow task on the server
// (BENCHMARKS.md, capacity).
//
// Per item, the guarantees of submitItem hold:
// - Each item's submit is a call of its own (`<activity id>/<plan index>`): journaled the moment
//   the API answers and sent with its own Idempotency-Key, so a retry of the slice (its worker
//   died) takes the tasks its earlier attempts got, and resends the others with the same key.
// - One item's failure never fails its neighbours. A refusal for good (a non-retryable answer)
//   is the item's failure; a failure a retry may heal comes back as `retryAs`, for the workflow to
//   retry that item alone with Temporal's retries (submitItem carrying on the same call); a 429
//   created nothing, so its item goes back to the queue, like the items not sent.
// - Only what fails the slice as a whole (its plan unreadable, the API not configured) fails the
//   activity, once the submits in flight have answered and been journaled.
import { ApplicationFailure } from '@temporalio/activity';
import { RateLimitError } from '../api/index.js';
import { errorSummary, PixelmillError } from '../common/errors.js';
import { FailureType } from '../common/failure-types.js';
import type { ErrorSummary, SlicedSubmit, SubmitSliceInput, SubmitSliceOutput } from '../common/types.js';
import {
  followTask,
  generationRequest,
  pastDeadline,
  sendSubmit,
  submitOptions,
  submitTurn,
  resendUnsafe,
  type ApiCallDeps,
  type SubmitSend,
} from './api-calls.js';
import { answerOf, callName } from './api-evidence.js';
import { toActivityFailure } from './failures.js';
import { currentSubmitCall, earlierSliceTasks, itemCall, recordTakeover } from './submit-journal.js';
import type { Confirmed } from './unconfirmed-submits.js';

/**
 * Submits of a slice on the wire at once. The gate spaces their starts at the rate; this bounds
 * the answers awaited when the API is slow to answer (16 at 50 ms each is 320 submits a second).
 */
export const SLICE_IN_FLIGHT = 16;
/**
 * How long a slice takes turns: the items whose turn has not come by then go back to the queue,
 * so that a slow rate (or a rate cut by a 429) never holds items in a slice for long.
 */
export const SLICE_BUDGET_MS = 2_000;

/**
 * The summary of a failure Temporal would not retry (as the workflow would read it from the
 * activity's failure), or undefined for one it would: our errors say so themselves; the failures
 * raised as such (the API not configured, references that cannot be hosted) by nonRetryable.
 */
function finalFailure(error: unknown): ErrorSummary | undefined {
  if (error instanceof PixelmillError) return error.retryable ? undefined : errorSummary(error);
  if (!(error instanceof ApplicationFailure) || !error.nonRetryable) return undefined;
  return {
    type: error.type ?? FailureType.ActivityFailed,
    code: error.type ?? 'activity_failed',
    message: error.message,
  };
}

export function submitSliceActivity(deps: ApiCallDeps) {
  const { runState, clients, gate, evidence } = deps;

  /** One item's submit: what became of it. */
  async function submitOne(index: number, send: SubmitSend, confirmed: Confirmed): Promise<SlicedSubmit> {
    const { call } = send;
    try {
      return { index, ...(await sendSubmit(deps, send)) };
    } catch (error) {
      evidence.failed('submit', error, call && callName(call.activityId));
      const unsafe = resendUnsafe(error, send.meta);
      if (unsafe) return { index, failure: unsafe };
      if (error instanceof RateLimitError)
        return {
          index,
          untried: true,
          ...(error.limit === 'concurrency' ? { overConcurrency: true as const } : {}),
        };
      const failure = finalFailure(error);
      if (failure) return { index, failure };
      if (!call) return { index, untried: true };
      return { index, retryAs: { call: call.activityId, triedAt: Date.now(), answer: answerOf(error) } };
    } finally {
      confirmed();
    }
  }

  return async function submitSlice(input: SubmitSliceInput): Promise<SubmitSliceOutput> {
    const { plan } = input;
    const slice = await currentSubmitCall();
    const meta = await runState.readPlanMeta(plan);
    const client = clients.forPlan(meta);
    const earlier = slice ? await earlierSliceTasks(runState, plan, slice) : new Map();
    const until = Date.now() + SLICE_BUDGET_MS;
    const outcomes: SlicedSubmit[] = [];
    const inFlight = new Set<Promise<void>>();
    let calls = 0;
    let failure: { error: unknown } | undefined;
    // Past a concurrency refusal, the rest would only be refused too: the shard sends them later.
    const sendable = (): boolean =>
      !failure &&
      !outcomes.some((outcome) => outcome.overConcurrency) &&
      Date.now() < until &&
      !pastDeadline(input.notAfter);

    for (const { index } of input.items) {
      const call = slice && itemCall(slice, index);
      const taken = earlier.get(index);
      if (call && taken) {
        await recordTakeover(runState, plan, call, taken);
        if (input.follow) followTask(deps, client, meta, taken.task);
        outcomes.push({ index, taskId: taken.task });
        // The attempt that made this call never reported it: counted here, as submitItem does.
        calls++;
        continue;
      }
      if (!sendable()) {
        outcomes.push({ index, untried: true });
        continue;
      }
      try {
        while (inFlight.size >= SLICE_IN_FLIGHT) await Promise.race(inFlight);
        const { request } = await generationRequest(deps, plan, index);
        const { answered, confirmed } = await submitTurn(gate, client, meta);
        // The turn may have waited for a slot while the slice's time ran out or a refusal came.
        if (!sendable()) {
          confirmed();
          outcomes.push({ index, untried: true });
          continue;
        }
        calls++;
        const options = submitOptions(deps, meta, input.webhook, call);
        const send = { client, meta, request, options, plan, call, answered, follow: input.follow };
        const sent = submitOne(index, send, confirmed).then((outcome) => {
          outcomes.push(outcome);
          inFlight.delete(sent);
        });
        inFlight.add(sent);
      } catch (error) {
        // The item's own problem (its references cannot be hosted) is its failure; anything else
        // (the plan, the rate held by the provider) stops the slice: once nothing was sent, the
        // activity fails and Temporal retries it; else the rest goes back to the queue.
        const own = finalFailure(error);
        if (own) outcomes.push({ index, failure: own });
        else {
          failure = { error };
          outcomes.push({ index, untried: true });
        }
      }
    }
    await Promise.all(inFlight);
    if (failure && calls === 0 && earlier.size === 0) throw toActivityFailure(failure.error);
    return { items: outcomes, calls };
  };
}
