// The typed client of the first API's wire format (spec part 4): submit, single and batch task
// queries, and result downloads, over one keep-alive pool (api/http-client.ts). It never retries:
// callers (Temporal activities) decide from each error's `retryable` and `retryAfterMs`.
import { ApiHttp, type ApiHttpOptions, type EndpointStats } from '../../api/http-client.js';
import { RESULT_ENDPOINT } from '../../api/download.js';
import { HttpBackedClient } from '../http-backed-client.js';
import {
  BatchEnvelopeSchema,
  GenerationRequestSchema,
  MAX_BATCH_IDS,
  SubmitAckSchema,
  TaskEnvelopeSchema,
  type BatchItem,
  type GenerationRequest,
  type Language,
  type SubmitAck,
  type Task,
} from './wire.js';

export type ImageApiClientOptions = Omit<ApiHttpOptions, 'authHeaders' | 'trustsOrigin'>;
export type { EndpointStats };

export const ENDPOINTS = {
  submit: 'POST /v1/images/generations',
  getTask: 'GET /v1/tasks/{id}',
  batchLookup: 'POST /v1/tasks/batch',
  downloadResult: RESULT_ENDPOINT,
} as const;

export interface SubmitResult {
  taskIds: string[];
  raw: SubmitAck;
}

export class ImageApiClient extends HttpBackedClient<ApiHttp> {
  constructor(options: ImageApiClientOptions) {
    super(new ApiHttp({ ...options, authHeaders: (key) => ({ authorization: `Bearer ${key}` }) }));
  }

  /**
   * Submits one generation request; resolves with the new task ids as soon as they are known.
   * `idempotencyKey` goes out as the Idempotency-Key header: a provider that honours it answers a
   * repeat of the same key and body with the task the first one created, and charges once.
   */
  async submit(
    request: GenerationRequest,
    opts: { signal?: AbortSignal; idempotencyKey?: string } = {},
  ): Promise<SubmitResult> {
    const ctx = this.http.context(ENDPOINTS.submit, 'v1/images/generations');
    const checked = GenerationRequestSchema.safeParse(request);
    if (!checked.success) {
      const problems = checked.error.issues.map((i) => `${i.path.join('.') || '(request)'}: ${i.message}`);
      throw this.http.rejected(ctx, `invalid generation request: ${problems.join('; ')}`);
    }
    const raw = await this.http.call({
      endpoint: ENDPOINTS.submit,
      to: ctx.url,
      method: 'POST',
      body: request,
      schema: SubmitAckSchema,
      signal: opts.signal,
      ...(opts.idempotencyKey !== undefined ? { headers: { 'idempotency-key': opts.idempotencyKey } } : {}),
    });
    if (raw.data.length === 0) throw this.http.invalid(ctx, 'no task ids', true);
    return { taskIds: raw.data.map((item) => item.task_id), raw };
  }

  /** The task's current state. Unknown status values are returned as they came. */
  async getTask(id: string, opts: { language?: Language; signal?: AbortSignal } = {}): Promise<Task> {
    const ctx = this.http.context(ENDPOINTS.getTask, `v1/tasks/${encodeURIComponent(id)}`);
    if (id === '') throw this.http.rejected(ctx, 'task id is empty');
    const envelope = await this.http.call({
      endpoint: ENDPOINTS.getTask,
      to: ctx.url,
      method: 'GET',
      schema: TaskEnvelopeSchema,
      ...(opts.language !== undefined ? { query: { language: opts.language } } : {}),
      signal: opts.signal,
    });
    if (envelope.data.id !== id) throw this.http.invalid(ctx, 'it describes another task');
    return envelope.data;
  }

  /** Id and status of 1..500 tasks (never results). */
  async batchLookup(ids: string[], opts: { signal?: AbortSignal } = {}): Promise<BatchItem[]> {
    const ctx = this.http.context(ENDPOINTS.batchLookup, 'v1/tasks/batch');
    if (ids.length < 1 || ids.length > MAX_BATCH_IDS) {
      throw this.http.rejected(ctx, `task_ids must hold 1 to ${MAX_BATCH_IDS} ids, got ${ids.length}`);
    }
    const envelope = await this.http.call({
      endpoint: ENDPOINTS.batchLookup,
      to: ctx.url,
      method: 'POST',
      body: { task_ids: ids },
      schema: BatchEnvelopeSchema,
      signal: opts.signal,
    });
    return envelope.data;
  }
}

export function createImageApiClient(options: ImageApiClientOptions): ImageApiClient {
  return new ImageApiClient(options);
}
