// The activities that call the run's provider (they run on the account's API task queues, whose
// dispatch rates Temporal limits across all workers): submit an item, look up a shard's tasks the
// provider's way (a batch, a list sweep, or one at a time), fetch one task. They use the provider
// interface only (providers/types.ts). Their failures go through failures.ts; a task the provider
// no longer knows is an answer (`expired`, `not_found`) for the workflow to act on, not a failure.
import { ApplicationFailure } from '@temporalio/activity';
import { isImageApiError } from '../api/index.js';
import { FailureType } from '../common/failure-types.js';
import type {
  ApiCallsMade,
  ErrorSummary,
  CancelTasksInput,
  FetchTaskInput,
  FetchTaskOutput,
  LookupTasksInput,
  LookupTasksOutput,
  PlanRef,
  SubmitItemInput,
  SubmitItemOutput,
  TaskResult,
} from '../common/types.js';
import type { ApiClients } from './api-clients.js';
import { callName, submitFailure, type ApiEvidence } from './api-evidence.js';
import { activityContext } from './context.js';
import { toActivityFailure } from './failures.js';
import type { Answered, RateGate, RunRate } from './rate-gate.js';
import type { ApiGroup } from '../governor/types.js';
import type { ReferenceHost } from '../references/host.js';
import { estimatedCredits, type PlanMeta, type RunStateStore } from '../runstate/index.js';
import { providerNamed } from '../providers/registry.js';
import { lookUpTasks } from './task-lookups.js';
import { unconfirmedSlot, type Confirmed } from './unconfirmed-submits.js';
import { mapLimit } from '../common/map-limit.js';
import { DEFAULTS } from '../manifest/normalize.js';
import type { Following, StatusFollowers } from './status-followers.js';

/** Cancels in flight at once: a few, each in its turn at the rate. */
const CANCELS_AT_ONCE = 4;
import type { ProviderClient, ProviderRequest, SubmitOptions } from '../providers/types.js';
import {
  carriedCall,
  currentSubmitCall,
  earlierTask,
  idempotencyKeyOf,
  recordTakeover,
  recordTask,
  type SubmitCall,
} from './submit-journal.js';

/**
 * A task is fetched only once a lookup or a webhook said it finished. A GET that answers a
 * status that is not terminal (`in_progress` and other values seen in the wild, or a lagging
 * replica) is asked again by Temporal's retry, 1 + 2 + 4 s apart, before the task goes back to
 * the shard's lookups: with webhooks on, those come tens of seconds apart.
 */
export const FETCH_ATTEMPTS_WHILE_UNFINISHED = 4;
const TERMINAL_STATUSES = new Set(['completed', 'failed']);
/** The terminal statuses, and the 404s' answers (readTask): what the workflow acts on. */
const ANSWERS = new Set([...TERMINAL_STATUSES, 'expired', 'not_found']);

export interface ApiCallDeps {
  runState: RunStateStore;
  clients: ApiClients;
  /** Waits for this worker's next call slot at the run's rate (rate-gate.ts). */
  gate: Pick<RateGate, 'acquire'>;
  /** What this worker saw the API do: what tells a refused item from an outage. */
  evidence: ApiEvidence;
  /** URLs for the run's local reference images. */
  references: Pick<ReferenceHost, 'urls'>;
  /** The run's webhook secret, for a provider that signs with the caller's (BFL); never in inputs. */
  webhookSecret?: (meta: PlanMeta) => string | undefined;
  /** The status streams this worker follows for the tasks it submits (status-followers.ts). */
  followers?: StatusFollowers;
}

/** API calls this activity made, its earlier attempts' included (see ApiCallsMade). */
function callsMade(): number {
  return activityContext()?.info.attempt ?? 1;
}

/** One call of `group` in its turn, its answer told to the gate. */
async function paced<T>(
  gate: ApiCallDeps['gate'],
  group: ApiGroup,
  run: RunRate,
  call: () => Promise<T>,
): Promise<T> {
  const answered = await gate.acquire(group, run);
  try {
    const result = await call();
    answered();
    return result;
  } catch (error) {
    answered(error);
    throw error;
  }
}

/** A GET's answer the workflow acts on: anything else, a lookup or a GET later may change. */
export function isAnswered(status: string): boolean {
  return ANSWERS.has(status);
}

/**
 * One task's state by a GET in its turn: its result when it has finished. A task the provider no
 * longer knows comes back as `expired` or `not_found`; any other failure is thrown as the activity
 * failure it is.
 */
export async function readTask(
  { gate, evidence }: Pick<ApiCallDeps, 'gate' | 'evidence'>,
  meta: RunRate,
  client: ProviderClient,
  ref: string,
): Promise<TaskResult> {
  try {
    const result = await paced(gate, 'query', meta, () => client.getTask(ref));
    evidence.succeeded('query');
    return result;
  } catch (error) {
    evidence.failed('query', error);
    throw toActivityFailure(error);
  }
}

/**
 * A completed task's cost, where the provider reports none (fal, Replicate): the estimate the
 * manifest's pricing gives the item, which the budget and the report use (and call an estimate).
 */
export async function withEstimatedCost(
  runState: RunStateStore,
  plan: PlanRef,
  meta: PlanMeta,
  index: number | undefined,
  result: TaskResult,
): Promise<TaskResult> {
  if (!meta.creditsEstimated || result.status !== 'completed' || result.creditsCost !== undefined)
    return result;
  if (index === undefined) return result;
  const { item } = await runState.readPlanItem(plan, index);
  return { ...result, creditsCost: estimatedCredits(item, meta) };
}

/**
 * The provider's request for the plan's item `index` (its references' URLs signed now). The
 * manifest was validated against the provider's mapping, so a problem here means the plan and the
 * provider disagree (a plan made by another version): the item fails, with the mapping's words.
 */
export async function generationRequest(
  { runState, references }: Pick<ApiCallDeps, 'runState' | 'references'>,
  plan: PlanRef,
  index: number,
): Promise<{ meta: PlanMeta; request: ProviderRequest }> {
  const { meta, item } = await runState.readPlanItem(plan, index);
  const imageUrls = item.image_urls?.length ? await references.urls(meta, item.image_urls) : undefined;
  const mapped = providerNamed(meta.provider).mapRequest({
    prompt: item.prompt,
    model: item.model,
    size: item.size,
    resolution: item.resolution,
    n: item.n,
    ...(imageUrls ? { image_urls: imageUrls } : {}),
    ...(item.language !== undefined ? { language: item.language } : {}),
    ...(item.params !== undefined ? { params: item.params } : {}),
  });
  if ('problems' in mapped) {
    const problems = mapped.problems.map((p) => `${p.path.join('.')}: ${p.message}`).join('; ');
    throw ApplicationFailure.nonRetryable(
      `items[${index}] cannot be sent to ${meta.provider ?? 'the API'}: ${problems}`,
      FailureType.InvalidRequestError,
    );
  }
  return { meta, request: mapped.request };
}

/** How a run's submits are sent: to its shard's webhook, given up if not started within task_timeout. */
export function submitOptions(
  { webhookSecret }: Pick<ApiCallDeps, 'webhookSecret'>,
  meta: PlanMeta,
  webhook: string | undefined,
  call: SubmitCall | undefined,
): SubmitOptions {
  const options: SubmitOptions = {};
  if (call) options.idempotencyKey = idempotencyKeyOf(call);
  if (webhook !== undefined) {
    options.webhook = webhook;
    const secret = webhookSecret?.(meta);
    if (secret) options.webhookSecret = secret;
  }
  if (providerNamed(meta.provider).capabilities.startDeadline) options.startWithinMs = meta.taskTimeoutMs;
  return options;
}

/**
 * A submit whose answer was lost after it was sent (a timeout waiting for it, a reset, a garbled
 * 2xx), to a provider that takes no idempotency key: the provider may have created (and billed)
 * the task, and another try would create a second. The item fails with the reason instead of
 * being sent again; `pixelmill retry-failed` resends it when the user chooses to. An error the
 * provider answered (a 5xx) says it did not take the task, and is retried.
 */
export function resendUnsafe(error: unknown, meta: Pick<PlanMeta, 'provider'>): ErrorSummary | undefined {
  if (!isImageApiError(error) || !error.outcomeUnknown) return undefined;
  if (error.httpStatus !== undefined && error.httpStatus >= 300) return undefined;
  if (providerNamed(meta.provider).capabilities.idempotencyKeys) return undefined;
  return {
    type: FailureType.SubmitOutcomeUnknown,
    code: 'submit_outcome_unknown',
    message:
      `${error.message}; the provider may have created this task and takes no idempotency key, so ` +
      'pixelmill does not send it again (`pixelmill retry-failed` does, at the risk of a second task)',
  };
}

/** Submits queue for the rate limit: one whose turn comes after the run's deadline is not sent. */
export function pastDeadline(notAfter: number | undefined): boolean {
  return notAfter !== undefined && Date.now() >= notAfter;
}

/**
 * A submit's turn: a slot among this worker's unconfirmed submits (unconfirmed-submits.ts), then
 * the rate's. `confirmed` releases the slot: once the task is journaled, or nothing was sent.
 */
export async function submitTurn(
  gate: ApiCallDeps['gate'],
  client: ProviderClient,
  meta: PlanMeta,
): Promise<{ answered: Answered; confirmed: Confirmed }> {
  const confirmed = await unconfirmedSlot(client, meta);
  try {
    return { answered: await gate.acquire('submit', meta), confirmed };
  } catch (error) {
    confirmed();
    throw error;
  }
}

/** One submit, sent as `call` (its Idempotency-Key) and answered to the gate. */
export interface SubmitSend {
  client: ProviderClient;
  /** The run's settings: its provider says whether a submit may be sent again. */
  meta: PlanMeta;
  request: ProviderRequest;
  options: SubmitOptions;
  plan: PlanRef;
  call: SubmitCall | undefined;
  answered: Answered;
  /** Follow the task's status stream once it exists (the submit's `follow`). */
  follow?: boolean;
}

/**
 * Sends one submit and returns its task, journaled under its call before this returns; its
 * failure is thrown as the client classified it (the caller decides what it means).
 */
export async function sendSubmit(
  { runState, evidence, followers }: Pick<ApiCallDeps, 'runState' | 'evidence' | 'followers'>,
  { client, meta, request, options, plan, call, answered, follow }: SubmitSend,
): Promise<{ taskId: string; creditsCost?: number; queuePosition?: number }> {
  let task;
  try {
    task = await client.submit(request, options);
    answered();
  } catch (error) {
    answered(error);
    throw error;
  }
  // The evidence knows a submit by its call (a slice's item, or the call a submitItem carries on).
  evidence.succeeded('submit', call && callName(call.activityId));
  evidence.lastTaskId = task.ref;
  if (call) await recordTask(runState, plan, call, task.ref);
  const following = follow ? followTask({ followers }, client, meta, task.ref) : undefined;
  // Where the answer says nothing of the queue, the stream's first state (sent at once) does.
  const queuePosition = task.queuePosition ?? (following && (await firstQueuePosition(following)));
  return {
    taskId: task.ref,
    ...(task.creditsCost !== undefined ? { creditsCost: task.creditsCost } : {}),
    ...(queuePosition !== undefined ? { queuePosition } : {}),
  };
}

/** Follows a task's status stream for the running shard, when the provider has one (status-followers.ts). */
export function followTask(
  { followers }: Pick<ApiCallDeps, 'followers'>,
  client: ProviderClient,
  meta: PlanMeta,
  ref: string,
): Following | undefined {
  if (!providerNamed(meta.provider).capabilities.statusStream) return undefined;
  return followers?.followForShard(client, ref, meta.taskTimeoutMs ?? DEFAULTS.taskTimeoutMs);
}

/** How long a submit waits for its stream's first state, the queue's length in it. */
const FIRST_STATE_WAIT_MS = 2_000;

/** The tasks waiting ahead of a followed one as its stream's first state tells: none once it runs. */
async function firstQueuePosition(following: Following): Promise<number | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>(
    (resolve) => (timer = setTimeout(() => resolve(undefined), FIRST_STATE_WAIT_MS)),
  );
  const state = await Promise.race([following.first, late]).finally(() => clearTimeout(timer));
  if (state?.status === 'pending') return state.queuePosition;
  return state === undefined ? undefined : 0;
}

export function apiCallActivities(deps: ApiCallDeps) {
  const { runState, clients, gate, evidence } = deps;
  async function submitItem(input: SubmitItemInput): Promise<SubmitItemOutput> {
    // A retry whose earlier attempt got its task before the worker died takes that task.
    const current = await currentSubmitCall();
    const call = current && input.carriesOn ? carriedCall(current, input.carriesOn.call) : current;
    const earlier = call && (await earlierTask(runState, input.plan, call));
    if (earlier) {
      await recordTakeover(runState, input.plan, call, earlier);
      if (input.follow) {
        const meta = await runState.readPlanMeta(input.plan);
        followTask(deps, clients.forPlan(meta), meta, earlier.task);
      }
      return { taskId: earlier.task, calls: callsMade() - 1 };
    }

    const { meta, request } = await generationRequest(deps, input.plan, input.index);
    const client = clients.forPlan(meta);
    const options = submitOptions(deps, meta, input.webhook, call);
    const { answered, confirmed } = await submitTurn(gate, client, meta);
    if (pastDeadline(input.notAfter)) {
      confirmed();
      throw ApplicationFailure.nonRetryable(
        "the run's deadline passed before this submit was sent",
        FailureType.DeadlinePassed,
      );
    }
    try {
      const task = await sendSubmit(deps, {
        client,
        meta,
        request,
        options,
        plan: input.plan,
        call,
        answered,
        ...(input.follow ? { follow: true } : {}),
      });
      return { ...task, calls: callsMade() };
    } catch (error) {
      confirmed();
      const unsafe = resendUnsafe(error, meta);
      if (unsafe) throw ApplicationFailure.nonRetryable(unsafe.message, unsafe.type, unsafe);
      throw await submitFailure(
        error,
        evidence,
        (taskId) => paced(gate, 'query', meta, () => client.lookupOne(taskId)),
        input.carriesOn,
        input.probeTaskId,
      );
    } finally {
      confirmed();
    }
  }

  /**
   * The states of a shard's tasks, the provider's way: one batch call, a sweep of its list, or one
   * call per task (each in its turn at the rate). Finished tasks come with their results when the
   * provider's answer carries them, so the shard collects them without another call.
   */
  async function lookupTasks(input: LookupTasksInput): Promise<LookupTasksOutput> {
    if (input.taskIds.length === 0) return { statuses: [], calls: 0 };
    const meta = await runState.readPlanMeta(input.plan);
    const client = clients.forPlan(meta);
    const style = providerNamed(meta.provider).capabilities.lookup;
    const request = {
      refs: input.taskIds,
      ...(input.sinceMs !== undefined ? { sinceMs: input.sinceMs } : {}),
    };
    let answer;
    try {
      answer = await lookUpTasks(client, style, request, (call) => paced(gate, 'query', meta, call));
    } catch (error) {
      evidence.failed('query', error);
      throw toActivityFailure(error);
    }
    evidence.succeeded('query');
    const output: LookupTasksOutput = {
      statuses: answer.states.map((state) => state.status),
      calls: answer.calls,
    };
    if (answer.states.some((state) => state.result))
      output.results = answer.states.map((state) => state.result ?? null);
    // Waiting behind others in the provider's queue (fal): the next to run (position 0) is not.
    const queued = answer.states.filter((state) => (state.queuePosition ?? 0) > 0).length;
    if (queued > 0) output.queued = queued;
    return output;
  }

  async function fetchTask(input: FetchTaskInput): Promise<FetchTaskOutput> {
    const meta = await runState.readPlanMeta(input.plan);
    if (input.known)
      return { ...(await withEstimatedCost(runState, input.plan, meta, input.index, input.known)), calls: 0 };
    const read = await readTask({ gate, evidence }, meta, clients.forPlan(meta), input.taskId);
    const result = await withEstimatedCost(runState, input.plan, meta, input.index, read);
    const attempt = activityContext()?.info.attempt ?? FETCH_ATTEMPTS_WHILE_UNFINISHED;
    if (!isAnswered(result.status) && attempt < FETCH_ATTEMPTS_WHILE_UNFINISHED) {
      throw ApplicationFailure.retryable(
        `task ${input.taskId} was reported finished, but its GET answered status "${result.status}"`,
        FailureType.TaskNotFinished,
      );
    }
    return { ...result, calls: callsMade() };
  }

  /**
   * Cancels each task the provider has still not started, asked again first (the shard's last
   * lookup may be a second old, and a task that started is worth its images), each call in its
   * turn at the rate. A call that fails is not retried: the task then runs on, and its lookups say
   * how it ended, as for any other.
   */
  async function cancelTasks(input: CancelTasksInput): Promise<ApiCallsMade> {
    const meta = await runState.readPlanMeta(input.plan);
    const client = clients.forPlan(meta);
    let calls = 0;
    await mapLimit(input.taskIds, CANCELS_AT_ONCE, async (ref) => {
      calls++;
      const state = await paced(gate, 'query', meta, () => client.lookupOne(ref)).catch(() => undefined);
      if (state?.status !== 'pending') return;
      calls++;
      await paced(gate, 'query', meta, () => client.cancel(ref)).catch(() => undefined);
    });
    return { calls };
  }

  return { submitItem, lookupTasks, fetchTask, cancelTasks };
}
