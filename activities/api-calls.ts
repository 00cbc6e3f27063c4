// The activities that call the image API, one request each (they run on API_TASK_QUEUE, whose
// dispatch rate Temporal limits across all workers): submit an item, look up a shard's tasks in
// one batch, fetch one task. Their failures go through failures.ts; 404s of a task are answers
// (`expired`, `not_found`) for the workflow to act on, not failures.
import { ApplicationFailure } from '@temporalio/activity';
import { NotFoundError, type GenerationRequest, type ImageApiClient } from '../api/index.js';
import { FailureType } from '../common/failure-types.js';
import type {
  FetchTaskInput,
  FetchTaskOutput,
  LookupTasksInput,
  LookupTasksOutput,
  PlanRef,
  SubmitItemInput,
  SubmitItemOutput,
  TaskResult,
} from '../common/types.js';
import { taskError } from '../api/task-error.js';
import type { ApiClients } from './api-clients.js';
import { callName, submitFailure, type ApiEvidence } from './api-evidence.js';
import { activityContext } from './context.js';
import { toActivityFailure } from './failures.js';
import type { Answered, RateGate, RunRate } from './rate-gate.js';
import type { ApiGroup } from '../governor/types.js';
import type { ReferenceHost } from '../references/host.js';
import type { PlanMeta, RunStateStore } from '../runstate/index.js';
import {
  carriedCall,
  currentSubmitCall,
  earlierTask,
  idempotencyKeyOf,
  recordTakeover,
  recordTask,
  type SubmitCall,
} from './submit-journal.js';

/** Status reported for an id the batch answer left out: not a task state, so "not finished yet". */
export const MISSING_FROM_BATCH = 'missing';

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
 * One task's state by a GET in its turn. A 404 is the service's answer for an unknown or expired
 * task, for the workflow to act on; any other failure is thrown as the activity failure it is.
 */
export async function readTask(
  { gate, evidence }: Pick<ApiCallDeps, 'gate' | 'evidence'>,
  meta: RunRate,
  client: ImageApiClient,
  taskId: string,
): Promise<TaskResult> {
  let task;
  try {
    task = await paced(gate, 'query', meta, () => client.getTask(taskId));
  } catch (error) {
    if (error instanceof NotFoundError) {
      evidence.succeeded('query');
      return { status: error.apiCode === 'task_expired' ? 'expired' : 'not_found' };
    }
    evidence.failed('query', error);
    throw toActivityFailure(error);
  }
  evidence.succeeded('query');
  const result: TaskResult = { status: task.status };
  if (task.result !== undefined) {
    result.urls = task.result.url;
    // The API gives Unix seconds; workflows compare with their clock in milliseconds.
    if (task.result.expires_at !== undefined) result.expiresAt = task.result.expires_at * 1000;
  }
  if (task.credits_cost !== undefined) result.creditsCost = task.credits_cost;
  if (task.error !== undefined) result.error = taskError(task.error);
  return result;
}

/** The request that generates the plan's item `index` (its references' URLs signed now). */
export async function generationRequest(
  { runState, references }: Pick<ApiCallDeps, 'runState' | 'references'>,
  plan: PlanRef,
  index: number,
  webhook: string | undefined,
): Promise<{ meta: PlanMeta; request: GenerationRequest }> {
  const { meta, item } = await runState.readPlanItem(plan, index);
  const request: GenerationRequest = {
    prompt: item.prompt,
    model: item.model,
    size: item.size,
    resolution: item.resolution,
    n: item.n,
  };
  if (item.image_urls?.length) request.image_urls = await references.urls(meta, item.image_urls);
  if (item.language !== undefined) request.language = item.language;
  if (webhook !== undefined) request.webhook = webhook;
  return { meta, request };
}

/** Submits queue for the rate limit: one whose turn comes after the run's deadline is not sent. */
export function pastDeadline(notAfter: number | undefined): boolean {
  return notAfter !== undefined && Date.now() >= notAfter;
}

/** One submit, sent as `call` (its Idempotency-Key) and answered to the gate. */
export interface SubmitSend {
  client: ImageApiClient;
  request: GenerationRequest;
  plan: PlanRef;
  call: SubmitCall | undefined;
  answered: Answered;
}

/**
 * Sends one submit and returns its task, journaled under its call before this returns; its
 * failure is thrown as the client classified it (the caller decides what it means).
 */
export async function sendSubmit(
  { runState, evidence }: Pick<ApiCallDeps, 'runState' | 'evidence'>,
  { client, request, plan, call, answered }: SubmitSend,
): Promise<string> {
  let result;
  try {
    result = await client.submit(request, call ? { idempotencyKey: idempotencyKeyOf(call) } : {});
    answered();
  } catch (error) {
    answered(error);
    throw error;
  }
  // The evidence knows a submit by its call (a slice's item, or the call a submitItem carries on).
  evidence.succeeded('submit', call && callName(call.activityId));
  // submit() rejects an acknowledgement without ids, so the first one exists.
  const taskId = result.taskIds[0]!;
  evidence.lastTaskId = taskId;
  if (call) await recordTask(runState, plan, call, taskId);
  return taskId;
}

export function apiCallActivities(deps: ApiCallDeps) {
  const { runState, clients, gate, evidence } = deps;
  async function submitItem(input: SubmitItemInput): Promise<SubmitItemOutput> {
    // A retry whose earlier attempt got its task before the worker died takes that task.
    const current = currentSubmitCall();
    const call = current && input.carriesOn ? carriedCall(current, input.carriesOn.call) : current;
    const earlier = call && (await earlierTask(runState, input.plan, call));
    if (earlier) {
      await recordTakeover(runState, input.plan, call, earlier);
      return { taskId: earlier.task, calls: callsMade() - 1 };
    }

    const { meta, request } = await generationRequest(deps, input.plan, input.index, input.webhook);
    const client = clients.forPlan(meta);
    const answered = await gate.acquire('submit', meta);
    if (pastDeadline(input.notAfter)) {
      throw ApplicationFailure.nonRetryable(
        "the run's deadline passed before this submit was sent",
        FailureType.DeadlinePassed,
      );
    }
    try {
      const taskId = await sendSubmit(deps, { client, request, plan: input.plan, call, answered });
      return { taskId, calls: callsMade() };
    } catch (error) {
      throw await submitFailure(
        error,
        evidence,
        (taskId) => paced(gate, 'query', meta, () => client.batchLookup([taskId])),
        input.carriesOn,
      );
    }
  }

  async function lookupTasks(input: LookupTasksInput): Promise<LookupTasksOutput> {
    if (input.taskIds.length === 0) return { statuses: [], calls: 0 };
    const meta = await runState.readPlanMeta(input.plan);
    const client = clients.forPlan(meta);
    let answer;
    try {
      answer = await paced(gate, 'query', meta, () => client.batchLookup(input.taskIds));
    } catch (error) {
      evidence.failed('query', error);
      throw toActivityFailure(error);
    }
    evidence.succeeded('query');
    // The service answers in the order asked; matching by id keeps us right even if it did not.
    const byId = new Map(answer.map((entry) => [entry.id, entry.status]));
    return { statuses: input.taskIds.map((id) => byId.get(id) ?? MISSING_FROM_BATCH), calls: callsMade() };
  }

  async function fetchTask(input: FetchTaskInput): Promise<FetchTaskOutput> {
    const meta = await runState.readPlanMeta(input.plan);
    const result = await readTask({ gate, evidence }, meta, clients.forPlan(meta), input.taskId);
    const attempt = activityContext()?.info.attempt ?? FETCH_ATTEMPTS_WHILE_UNFINISHED;
    if (!isAnswered(result.status) && attempt < FETCH_ATTEMPTS_WHILE_UNFINISHED) {
      throw ApplicationFailure.retryable(
        `task ${input.taskId} was reported finished, but its GET answered status "${result.status}"`,
        FailureType.TaskNotFinished,
      );
    }
    return { ...result, calls: callsMade() };
  }

  return { submitItem, lookupTasks, fetchTask };
}
