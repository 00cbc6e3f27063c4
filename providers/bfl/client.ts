// BFL's FLUX API behind the provider interface, over ApiHttp with the key in `x-key`:
// - submit: `POST /v1/{model}` with the mapped body, the webhook as `webhook_url` (the address as
//   given) and its `webhook_secret`; the task's reference is `id|<polling_url>`, and the answer's
//   `cost` (credits) is the task's cost. BFL has no idempotency header and no start deadline.
// - lookupOne and getTask: one `GET {polling_url}` (the regional host that took the task, trusted
//   by hosts.ts); its answer carries the result, so a Ready task is collected from the lookup.
// - no cancel endpoint: cancel does nothing.
// Error answers are read BFL's way: a 429 at submit is its active-task limit (a concurrency), a
// 422 FastAPI's validation error, a 403 "Not authenticated" a bad key; get_result's "Task not
// found" (200, or 404 on some hosts) is the answer `not_found`, not a failure, for a task polled
// at its polling_url; a task known by its id alone is polled on the base URL, where that word is
// not conclusive (BFL's global endpoint spreads tasks over clusters): it stays unfinished.
import { ApiHttp, type ApiHttpOptions } from '../../api/http-client.js';
import { errorFromStatus, type RequestContext } from '../../api/classify.js';
import { RESULT_ENDPOINT, type DownloadedResult } from '../../api/download.js';
import {
  AuthenticationError,
  BadRequestError,
  ImageApiError,
  NotFoundError,
  RateLimitError,
  ResultDownloadError,
  ResultExpiredError,
  type ImageApiErrorDetails,
} from '../../api/errors.js';
import { locatorOf, taskIdOf, taskRef } from '../../common/task-ref.js';
import { HttpBackedClient } from '../http-backed-client.js';
import type {
  CallOptions,
  ProviderClient,
  ProviderRequest,
  SubmitOptions,
  SubmittedTask,
  TaskResult,
  TaskState,
} from '../types.js';
import { bflTrustsOrigin } from './hosts.js';
import { taskStateOf } from './task-result.js';
import { BFL_STATUS, ResultResponseSchema, SubmitAnswerSchema, type ResultResponse } from './wire.js';

export type BflClientOptions = Omit<ApiHttpOptions, 'authHeaders' | 'trustsOrigin'>;

export const ENDPOINTS = {
  submit: 'POST /v1/{model}',
  getResult: 'GET {polling_url}',
  downloadResult: RESULT_ENDPOINT,
} as const;

/** `apiCode` of a get_result 404 whose body says "Task not found" (an answer, not a failure). */
export const TASK_NOT_FOUND = 'task_not_found';
/**
 * The state of a task known by its id alone that the base host does not find: not finished yet
 * for the workflow (its webhook, or task_timeout, settles it).
 */
export const UNLOCATED = 'unlocated';
/** A model name as a path segment: BFL's are lower-case words, digits, dots and dashes. */
const MODEL_NAME = /^[a-z0-9][a-z0-9.-]*$/;

type Headers = Record<string, string | string[] | undefined>;

export class BflClient extends HttpBackedClient<ApiHttp> implements ProviderClient {
  readonly provider = 'bfl';
  readonly #trusts: (url: URL) => boolean;
  readonly #now: () => number;

  constructor(options: BflClientOptions) {
    // The trust test needs the base URL as ApiHttp normalizes it; it is first asked on a call.
    let trusts: (url: URL) => boolean = () => false;
    super(
      new ApiHttp({
        ...options,
        authHeaders: (key) => ({ 'x-key': key }),
        trustsOrigin: (url) => trusts(url),
      }),
    );
    this.#trusts = trusts = bflTrustsOrigin(this.http.baseUrl);
    this.#now = options.now ?? Date.now;
  }

  async submit(request: ProviderRequest, options: SubmitOptions = {}): Promise<SubmittedTask> {
    const ctx = this.http.context(ENDPOINTS.submit, `v1/${request.model}`);
    if (!MODEL_NAME.test(request.model))
      throw this.http.rejected(ctx, `"${request.model}" is not a model name`);
    const body: Record<string, unknown> = { ...request.body };
    if (options.webhook !== undefined) body.webhook_url = options.webhook;
    if (options.webhookSecret !== undefined) body.webhook_secret = options.webhookSecret;
    const answer = await this.http.call({
      endpoint: ENDPOINTS.submit,
      to: ctx.url,
      method: 'POST',
      body,
      schema: SubmitAnswerSchema,
      signal: options.signal,
      errorFor: bflError(ctx, 'submit'),
    });
    if (answer.id.includes('|')) throw this.http.invalid(ctx, 'the task id holds "|"', true);
    const task: SubmittedTask = { ref: answer.id };
    // A webhook submit may be answered without a polling_url: the id alone is then polled on the base.
    if (answer.polling_url)
      task.ref = taskRef(answer.id, this.#pollingUrl(ctx, answer.id, answer.polling_url));
    if (typeof answer.cost === 'number') task.creditsCost = answer.cost;
    return task;
  }

  async lookupOne(ref: string, options: CallOptions = {}): Promise<TaskState> {
    const answer = await this.#getResult(ref, options);
    const state: TaskState =
      answer === undefined ? { status: 'not_found' } : taskStateOf(answer, this.#now());
    // Without its polling_url (a webhook submit's answer may have none) a task is asked of the
    // base host, whose "Task not found" may only mean another cluster holds it: not an answer.
    if (state.status === 'not_found' && locatorOf(ref) === undefined) return { status: UNLOCATED };
    if (state.status === 'completed' && state.result === undefined) {
      const ctx = this.http.context(ENDPOINTS.getResult, this.#pollTarget(ref));
      throw this.http.invalid(ctx, `status ${BFL_STATUS.ready} without result.sample`);
    }
    return state;
  }

  async getTask(ref: string, options: CallOptions = {}): Promise<TaskResult> {
    const state = await this.lookupOne(ref, options);
    return state.result ?? { status: state.status };
  }

  /** BFL has no cancel endpoint: a task runs to its end (moderated tasks are not charged). */
  async cancel(): Promise<void> {}

  /**
   * Streams a sample. Its host signs URLs Azure Blob's way: past the 10 minutes (or with a
   * signature it no longer takes) it answers 403 AuthenticationFailed, which is an expired result.
   */
  override async download(url: string, options: CallOptions = {}): Promise<DownloadedResult> {
    try {
      return await super.download(url, options);
    } catch (error) {
      if (error instanceof ResultDownloadError && error.httpStatus === 403)
        throw new ResultExpiredError(`${error.message} (the signed sample URL has expired)`, {
          endpoint: error.endpoint,
          httpStatus: 403,
        });
      throw error;
    }
  }

  /** get_result's answer for the task, or undefined when BFL says "Task not found" with a 404. */
  async #getResult(ref: string, options: CallOptions): Promise<ResultResponse | undefined> {
    const id = taskIdOf(ref);
    const ctx = this.http.context(ENDPOINTS.getResult, this.#pollTarget(ref));
    if (id === '') throw this.http.rejected(ctx, 'task id is empty');
    let answer: ResultResponse;
    try {
      answer = await this.http.call({
        endpoint: ENDPOINTS.getResult,
        to: ctx.url,
        method: 'GET',
        schema: ResultResponseSchema,
        signal: options.signal,
        errorFor: bflError(ctx, 'get_result'),
      });
    } catch (error) {
      if (error instanceof NotFoundError && error.apiCode === TASK_NOT_FOUND) return undefined;
      throw error;
    }
    if (answer.id && answer.id !== id) throw this.http.invalid(ctx, 'it describes another task');
    return answer;
  }

  /** Where a task is polled: its polling_url, or get_result on the base URL for a bare id. */
  #pollTarget(ref: string): string {
    return locatorOf(ref) ?? `v1/get_result?id=${encodeURIComponent(taskIdOf(ref))}`;
  }

  /**
   * The polling_url of a new task, refused if it is not BFL's: the task exists (and is charged),
   * but polling it would send the key elsewhere, so the item fails saying why, not retried.
   */
  #pollingUrl(ctx: RequestContext, id: string, pollingUrl: string): string {
    let url: URL | undefined;
    try {
      url = new URL(pollingUrl);
    } catch {
      url = undefined;
    }
    if (url !== undefined && this.#trusts(url)) return pollingUrl;
    const where = url === undefined ? 'an address that is not a URL' : url.origin;
    throw new ImageApiError(
      'api_untrusted_polling_url',
      false,
      `${ctx.target} answered task ${id} with a polling_url on ${where}, which is not BFL's API: not polled (the key would go there)`,
      { endpoint: ctx.endpoint, outcomeUnknown: true },
    );
  }
}

/** BFL's reading of an error answer on top of the common classification. */
function bflError(ctx: RequestContext, call: 'submit' | 'get_result') {
  return (status: number, headers: Headers, body: string): ImageApiError | undefined => {
    const common = errorFromStatus(ctx, status, headers, body);
    const details: ImageApiErrorDetails = {
      endpoint: common.endpoint,
      httpStatus: status,
      outcomeUnknown: common.outcomeUnknown,
    };
    if (common.apiType !== undefined) details.apiType = common.apiType;
    if (common.apiCode !== undefined) details.apiCode = common.apiCode;
    if (common.retryAfterMs !== undefined) details.retryAfterMs = common.retryAfterMs;
    // "Sending requests to our API is limited to 24 active tasks... you'll receive 429".
    if (status === 429 && call === 'submit')
      return new RateLimitError(`${common.message} (BFL's limit of active tasks)`, {
        ...details,
        limit: 'concurrency',
      });
    if (status === 422) return new BadRequestError(common.message, details);
    if (status === 403 && /not authenticated/i.test(body))
      return new AuthenticationError(common.message, details);
    if (status === 404 && call === 'get_result' && saysTaskNotFound(body))
      return new NotFoundError(common.message, { ...details, apiCode: TASK_NOT_FOUND });
    return undefined;
  };
}

function saysTaskNotFound(body: string): boolean {
  try {
    const parsed = ResultResponseSchema.safeParse(JSON.parse(body));
    return parsed.success && parsed.data.status === BFL_STATUS.notFound;
  } catch {
    return false;
  }
}
