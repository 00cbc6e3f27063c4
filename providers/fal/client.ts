// fal's queue API behind the provider interface (docs.fal.ai: queue, inference API reference):
// `Authorization: Key`, one call per method over ApiHttp. A submit goes to `POST {base}/{model_id}`
// (sub-path included) with the webhook as `?fal_webhook=` and the start deadline as
// X-Fal-Request-Timeout; fal has no idempotency key, so the key pixelmill offers is not sent.
// The answer's URLs drop the model's sub-path, so they are kept, not rebuilt: the task reference is
// `request_id|<status URL's path below the base, without /status>`, from which the status
// (`/status`), result (itself) and cancel (`/cancel`) URLs follow as fal writes them; submit checks
// that the three it was given are these, on the base's origin.
//
// States come one request at a time from the status call (COMPLETED says finished, not how); the
// result call tells success from failure (outcome.ts reads it), a result fal no longer keeps is
// `expired`, and one asked for too early answers the state it is in.
import { ApiHttp } from '../../api/http-client.js';
import { RESULT_ENDPOINT } from '../../api/download.js';
import { ImageApiError, type ImageApiErrorDetails } from '../../api/errors.js';
import { locatorOf, taskIdOf, taskRef } from '../../common/task-ref.js';
import { HttpBackedClient } from '../http-backed-client.js';
import type {
  CallOptions,
  ProviderClient,
  ProviderClientOptions,
  ProviderRequest,
  SubmitOptions,
  SubmittedTask,
  TaskResult,
  TaskState,
} from '../types.js';
import { MODEL_ID } from './models.js';
import { outputResult, resultAnswer, type ResultAnswer } from './outcome.js';
import {
  AnyJsonSchema,
  HEADERS,
  StatusAnswerSchema,
  SubmitAnswerSchema,
  WEBHOOK_QUERY,
  type StatusAnswer,
  type SubmitAnswer,
} from './wire.js';

export const ENDPOINTS = {
  submit: 'POST /{model_id}',
  status: 'GET {status_url}',
  statusStream: 'GET {status_url}/stream',
  result: 'GET {response_url}',
  cancel: 'PUT {cancel_url}',
  downloadResult: RESULT_ENDPOINT,
} as const;

/**
 * The shortest X-Fal-Request-Timeout sent, in seconds: fal documents "at least 1 second" and its
 * JavaScript client refuses 1 or less, so a shorter deadline is rounded up to this.
 */
export const MIN_START_TIMEOUT_S = 2;

/** Statuses that finish a request besides COMPLETED (seen in third-party readings of fal's status). */
const ENDED = new Set(['COMPLETED', 'FAILED', 'ERROR', 'CANCELED', 'CANCELLED']);

/**
 * An answer of fal that is not a failure of the call: the request's outcome, its state, that it
 * is gone, or (cancel) that it had already finished. Thrown by `errorFor` out of ApiHttp's
 * classification and caught by the method that made the call; it never leaves this client.
 */
class FalAnswer extends ImageApiError {
  override name = 'FalAnswer';
  constructor(
    readonly answer: ResultAnswer | { kind: 'finished' },
    details: ImageApiErrorDetails,
  ) {
    super('api_fal_answer', false, `${details.endpoint} answered ${answer.kind}`, details);
  }
}

export class FalClient extends HttpBackedClient<ApiHttp> implements ProviderClient {
  readonly provider = 'fal';
  readonly #now: () => number;

  constructor(options: ProviderClientOptions) {
    super(new ApiHttp({ ...options, authHeaders: (key) => ({ authorization: `Key ${key}` }) }));
    this.#now = options.now ?? Date.now;
  }

  async submit(request: ProviderRequest, options: SubmitOptions = {}): Promise<SubmittedTask> {
    const ctx = this.http.context(ENDPOINTS.submit, request.model);
    if (!MODEL_ID.test(request.model))
      throw this.http.rejected(ctx, `"${request.model}" is not a fal model id`);
    const headers: Record<string, string> = {};
    if (options.startWithinMs !== undefined)
      headers[HEADERS.requestTimeout] = String(
        Math.max(MIN_START_TIMEOUT_S, Math.ceil(options.startWithinMs / 1000)),
      );
    const answer = await this.http.call({
      endpoint: ENDPOINTS.submit,
      to: request.model,
      method: 'POST',
      body: request.body,
      schema: SubmitAnswerSchema,
      headers,
      ...(options.webhook !== undefined ? { query: { [WEBHOOK_QUERY]: options.webhook } } : {}),
      signal: options.signal,
    });
    const locator = this.#locatorOf(answer);
    // The request exists at fal from here on: an answer we cannot use may still be billed.
    if (typeof locator !== 'string') throw this.http.invalid(ctx, locator.why, true);
    return {
      ref: taskRef(answer.request_id, locator),
      ...(typeof answer.queue_position === 'number' ? { queuePosition: answer.queue_position } : {}),
    };
  }

  async lookupOne(ref: string, options: CallOptions = {}): Promise<TaskState> {
    const locator = this.#locator(ENDPOINTS.status, ref);
    try {
      const answer = await this.http.call({
        endpoint: ENDPOINTS.status,
        to: `${locator}/status`,
        method: 'GET',
        schema: StatusAnswerSchema,
        errorFor: (status) =>
          status === 404 || status === 410
            ? this.#answer(ENDPOINTS.status, { kind: 'gone' }, status)
            : undefined,
        signal: options.signal,
      });
      return stateOf(answer);
    } catch (error) {
      if (error instanceof FalAnswer) return { status: 'expired' };
      throw error;
    }
  }

  /**
   * The status stream (server-sent events, one per change) followed until the request ends: fal
   * tells the moment, where timed status calls learn it up to a call's interval late.
   */
  async followStatus(
    ref: string,
    options: CallOptions & { onState?: (state: TaskState) => void } = {},
  ): Promise<TaskState> {
    const locator = this.#locator(ENDPOINTS.statusStream, ref);
    const ctx = this.http.context(ENDPOINTS.statusStream, `${locator}/status/stream`);
    try {
      return await this.http.events({
        endpoint: ENDPOINTS.statusStream,
        to: `${locator}/status/stream`,
        errorFor: (status) =>
          status === 404 || status === 410
            ? this.#answer(ENDPOINTS.statusStream, { kind: 'gone' }, status)
            : undefined,
        onData: (data) => {
          const answer = StatusAnswerSchema.safeParse(parseJson(data));
          if (!answer.success)
            throw this.http.invalid(ctx, `an event is not a status: ${data.slice(0, 200)}`);
          const state = stateOf(answer.data);
          options.onState?.(state);
          return state.status === 'completed' ? state : undefined;
        },
        signal: options.signal,
      });
    } catch (error) {
      if (error instanceof FalAnswer) return { status: 'expired' };
      throw error;
    }
  }

  async getTask(ref: string, options: CallOptions = {}): Promise<TaskResult> {
    const locator = this.#locator(ENDPOINTS.result, ref);
    const ctx = this.http.context(ENDPOINTS.result, locator);
    let body: unknown;
    try {
      body = await this.http.call({
        endpoint: ENDPOINTS.result,
        to: locator,
        method: 'GET',
        schema: AnyJsonSchema,
        errorFor: (status, headers, text) => {
          const answer = resultAnswer(status, headers, text, (t) => this.http.redact(t));
          return answer && this.#answer(ENDPOINTS.result, answer, status);
        },
        signal: options.signal,
      });
    } catch (error) {
      if (!(error instanceof FalAnswer)) throw error;
      const { answer } = error;
      if (answer.kind === 'outcome') return answer.result;
      if (answer.kind === 'state') return { status: answer.status };
      return { status: 'expired' };
    }
    const result = outputResult(body, this.#now());
    if (result === undefined) throw this.http.invalid(ctx, 'it holds neither images nor a queue status');
    return result;
  }

  /** Asks fal to stop the request; one that already finished, or is gone, needs nothing more. */
  async cancel(ref: string, options: CallOptions = {}): Promise<void> {
    const locator = this.#locator(ENDPOINTS.cancel, ref);
    try {
      await this.http.call({
        endpoint: ENDPOINTS.cancel,
        to: `${locator}/cancel`,
        method: 'PUT',
        schema: AnyJsonSchema,
        errorFor: (status, _headers, text) => {
          if (status === 404 || status === 410)
            return this.#answer(ENDPOINTS.cancel, { kind: 'gone' }, status);
          if (status === 400 && text.includes('ALREADY_COMPLETED'))
            return this.#answer(ENDPOINTS.cancel, { kind: 'finished' }, status);
          return undefined;
        },
        signal: options.signal,
      });
    } catch (error) {
      if (!(error instanceof FalAnswer)) throw error;
    }
  }

  #answer(endpoint: string, answer: FalAnswer['answer'], httpStatus: number): FalAnswer {
    return new FalAnswer(answer, { endpoint, httpStatus });
  }

  /** The reference's locator; a reference without one was not made by this client. */
  #locator(endpoint: string, ref: string): string {
    const locator = locatorOf(ref);
    if (locator === undefined || locator === '')
      throw this.http.rejected(
        this.http.context(endpoint, ''),
        `task ${taskIdOf(ref)} has no fal request path`,
      );
    return locator;
  }

  /** The status URL's path below the base, once the three URLs are checked to be fal's usual ones. */
  #locatorOf(answer: SubmitAnswer): string | { why: string } {
    if (answer.request_id.includes('|')) return { why: 'the request id holds "|"' };
    const base = this.http.baseUrl;
    const below = (text: string): string | undefined => {
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        return undefined;
      }
      if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) return undefined;
      return url.pathname.slice(base.pathname.length);
    };
    const status = below(answer.status_url);
    if (status === undefined || !status.endsWith('/status'))
      return { why: `status_url is not a status URL on ${base.origin}${base.pathname}` };
    const locator = status.slice(0, -'/status'.length);
    if (
      locator === '' ||
      below(answer.response_url) !== locator ||
      below(answer.cancel_url) !== `${locator}/cancel`
    )
      return { why: 'response_url and cancel_url are not beside status_url' };
    return locator;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function stateOf(answer: StatusAnswer): TaskState {
  switch (answer.status) {
    case 'IN_QUEUE':
      return typeof answer.queue_position === 'number'
        ? { status: 'pending', queuePosition: answer.queue_position }
        : { status: 'pending' };
    case 'IN_PROGRESS':
      return { status: 'processing' };
  }
  // Finished, but only the result call tells a success from a failure or a cancel: no result here.
  return ENDED.has(answer.status) ? { status: 'completed' } : { status: answer.status };
}
