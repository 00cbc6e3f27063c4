// Replicate's predictions API behind the provider interface, one HTTP call a method, over the
// shared ApiHttp (the key as `Authorization: Bearer`, only to the base URL's origin):
// - submit: POST /v1/models/{owner}/{name}/predictions (official models) or POST /v1/predictions
//   with `version`; the webhook with `webhook_events_filter: ["completed"]`, the start deadline as
//   Cancel-After. No `Prefer: wait` (pixelmill tracks predictions asynchronously), and no
//   idempotency header: Replicate documents none, so a retried create may make a second prediction.
// - lookups: the list sweep GET /v1/predictions?created_after=… (100 a page, newest first, `next`
//   followed only on the API's own origin), and GET /v1/predictions/{id} one at a time;
// - cancel: POST /v1/predictions/{id}/cancel; the webhook secret: GET /v1/webhooks/default/secret.
// A prediction the API does not know (404) is an answer, `not_found`, not a failure.
import type { z } from 'zod';
import type { RequestContext } from '../../api/classify.js';
import { RESULT_ENDPOINT } from '../../api/download.js';
import { NotFoundError } from '../../api/errors.js';
import { ApiHttp, type ApiCall } from '../../api/http-client.js';
import { taskIdOf } from '../../common/task-ref.js';
import { HttpBackedClient } from '../http-backed-client.js';
import type {
  CallOptions,
  ListedTasks,
  ListPage,
  ProviderClient,
  ProviderClientOptions,
  ProviderRequest,
  SubmitOptions,
  SubmittedTask,
  TaskResult,
  TaskState,
} from '../types.js';
import { replicateErrorFor } from './error-answers.js';
import { parseModelRef } from './models.js';
import { taskResultOf, taskStateOf, timeOf } from './task-result.js';
import { PredictionPageSchema, PredictionSchema, WebhookSecretSchema, type Prediction } from './wire.js';

export const ENDPOINTS = {
  createOfficial: 'POST /v1/models/{owner}/{name}/predictions',
  createVersion: 'POST /v1/predictions',
  get: 'GET /v1/predictions/{id}',
  list: 'GET /v1/predictions',
  cancel: 'POST /v1/predictions/{id}/cancel',
  webhookSecret: 'GET /v1/webhooks/default/secret',
  downloadResult: RESULT_ENDPOINT,
} as const;

/** Predictions a list page holds (the API's fixed page size). */
export const LIST_PAGE_SIZE = 100;
/** The shortest deadline Cancel-After takes (the API's OpenAPI description). */
export const MIN_CANCEL_AFTER_SECONDS = 5;

/** Cancel-After for a start deadline: whole seconds, rounded up, at least the API's minimum. */
export function cancelAfter(startWithinMs: number): string {
  return `${Math.max(MIN_CANCEL_AFTER_SECONDS, Math.ceil(startWithinMs / 1000))}s`;
}

export class ReplicateClient extends HttpBackedClient<ApiHttp> implements ProviderClient {
  readonly provider = 'replicate';

  constructor(options: ProviderClientOptions) {
    super(new ApiHttp({ ...options, authHeaders: (key) => ({ authorization: `Bearer ${key}` }) }));
  }

  async submit(request: ProviderRequest, options: SubmitOptions = {}): Promise<SubmittedTask> {
    const ref = parseModelRef(request.model);
    const endpoint = ref?.kind === 'official' ? ENDPOINTS.createOfficial : ENDPOINTS.createVersion;
    const path =
      ref?.kind === 'official'
        ? `v1/models/${encodeURIComponent(ref.owner)}/${encodeURIComponent(ref.name)}/predictions`
        : 'v1/predictions';
    const ctx = this.http.context(endpoint, path);
    if (ref === undefined) throw this.http.rejected(ctx, `"${request.model}" names no Replicate model`);
    const body: Record<string, unknown> = { ...request.body };
    if (ref.kind === 'version') body.version = ref.version;
    if (options.webhook !== undefined) {
      body.webhook = options.webhook;
      body.webhook_events_filter = ['completed'];
    }
    const headers: Record<string, string> = {};
    if (options.startWithinMs !== undefined && Number.isFinite(options.startWithinMs))
      headers['cancel-after'] = cancelAfter(options.startWithinMs);
    const prediction = await this.#call(ctx, {
      endpoint,
      to: ctx.url,
      method: 'POST',
      body,
      headers,
      schema: PredictionSchema,
      signal: options.signal,
    });
    return { ref: prediction.id };
  }

  async lookupOne(ref: string, options: CallOptions = {}): Promise<TaskState> {
    const prediction = await this.#get(ref, options);
    return prediction === undefined ? { status: 'not_found' } : taskStateOf(prediction);
  }

  async listTasks(page: ListPage, options: CallOptions = {}): Promise<ListedTasks> {
    const to = page.cursor === undefined ? 'v1/predictions' : page.cursor;
    if (!URL.canParse(to, this.http.baseUrl.href))
      throw this.http.rejected(
        this.http.context(ENDPOINTS.list, 'v1/predictions'),
        'the page cursor is not a URL',
      );
    const ctx = this.http.context(ENDPOINTS.list, to);
    const answer = await this.#call(ctx, {
      endpoint: ENDPOINTS.list,
      to: ctx.url,
      method: 'GET',
      schema: PredictionPageSchema,
      ...(page.cursor === undefined
        ? { query: { created_after: new Date(page.sinceMs).toISOString() } }
        : {}),
      signal: options.signal,
    });
    const tasks: ListedTasks['tasks'] = [];
    for (const prediction of answer.results) {
      const createdMs = timeOf(prediction.created_at);
      if (createdMs === undefined)
        throw this.http.invalid(ctx, `prediction ${prediction.id} has no created_at time`);
      tasks.push({ ...taskStateOf(prediction), id: prediction.id, createdMs });
    }
    return answer.next ? { tasks, next: answer.next } : { tasks };
  }

  async getTask(ref: string, options: CallOptions = {}): Promise<TaskResult> {
    const prediction = await this.#get(ref, options);
    return prediction === undefined ? { status: 'not_found' } : taskResultOf(prediction);
  }

  async cancel(ref: string, options: CallOptions = {}): Promise<void> {
    const path = `v1/predictions/${encodeURIComponent(taskIdOf(ref))}/cancel`;
    const ctx = this.http.context(ENDPOINTS.cancel, path);
    try {
      await this.#call(ctx, {
        endpoint: ENDPOINTS.cancel,
        to: ctx.url,
        method: 'POST',
        schema: PredictionSchema,
        signal: options.signal,
      });
    } catch (error) {
      // Gone already (removed, or never this account's): nothing is left to stop.
      if (!(error instanceof NotFoundError)) throw error;
    }
  }

  /** The account's webhook signing secret (`whsec_…`), for the receiver's verifier. */
  async webhookSecret(options: CallOptions = {}): Promise<string> {
    const ctx = this.http.context(ENDPOINTS.webhookSecret, 'v1/webhooks/default/secret');
    const answer = await this.#call(ctx, {
      endpoint: ENDPOINTS.webhookSecret,
      to: ctx.url,
      method: 'GET',
      schema: WebhookSecretSchema,
      signal: options.signal,
    });
    return answer.key;
  }

  /** GET /v1/predictions/{id}; undefined when the API does not know it. */
  async #get(ref: string, options: CallOptions): Promise<Prediction | undefined> {
    const id = taskIdOf(ref);
    const ctx = this.http.context(ENDPOINTS.get, `v1/predictions/${encodeURIComponent(id)}`);
    if (id === '') throw this.http.rejected(ctx, 'prediction id is empty');
    let prediction: Prediction;
    try {
      prediction = await this.#call(ctx, {
        endpoint: ENDPOINTS.get,
        to: ctx.url,
        method: 'GET',
        schema: PredictionSchema,
        signal: options.signal,
      });
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
    if (prediction.id !== id) throw this.http.invalid(ctx, 'it describes another prediction');
    return prediction;
  }

  #call<S extends z.ZodType>(ctx: RequestContext, call: ApiCall<S>): Promise<z.output<S>> {
    return this.http.call({ ...call, errorFor: replicateErrorFor(ctx) });
  }
}
