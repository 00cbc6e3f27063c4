// The typed client of the async image API (spec part 4): submit, single and batch task
// queries, and result downloads, over one keep-alive undici pool. It never retries: callers
// (Temporal activities) decide from each error's `retryable` and `retryAfterMs`.
import { Agent, interceptors, type Dispatcher } from 'undici';
import { UserError } from '../common/errors.js';
import type { RequestContext } from './classify.js';
import { downloadResult, RESULT_ENDPOINT, type DownloadedResult } from './download.js';
import type { z } from 'zod';
import { InvalidRequestError, InvalidResponseError } from './errors.js';
import { callJson } from './http.js';
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
} from './schemas.js';

export interface ImageApiClientOptions {
  /** The service base address, e.g. `https://api.example.com` (endpoints add `/v1/...`). */
  baseUrl: string;
  apiKey: string;
  /** Use this dispatcher instead of an own pool; `close()` then leaves it open. */
  dispatcher?: Dispatcher;
  /** Keep-alive connections per origin (default 16). */
  connections?: number;
  connectTimeoutMs?: number;
  /** Time to wait for an answer's headers (default 30 s). */
  headersTimeoutMs?: number;
  /** Longest pause between two body chunks (default 30 s). */
  bodyTimeoutMs?: number;
  userAgent?: string;
  /** Clock for HTTP-date Retry-After values. */
  now?: () => number;
}

export const ENDPOINTS = {
  submit: 'POST /v1/images/generations',
  getTask: 'GET /v1/tasks/{id}',
  batchLookup: 'POST /v1/tasks/batch',
  downloadResult: RESULT_ENDPOINT,
} as const;

export interface EndpointStats {
  calls: number;
  failures: number;
}

export interface SubmitResult {
  taskIds: string[];
  raw: SubmitAck;
}

const REDACTED = '[redacted]';

export class ImageApiClient {
  // Private fields are invisible to util.inspect, JSON.stringify and object spreading.
  readonly #apiKey: string;
  readonly #baseUrl: URL;
  readonly #dispatcher: Dispatcher;
  readonly #downloads: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #userAgent: string;
  readonly #now: () => number;
  readonly #stats = new Map<string, EndpointStats>();

  constructor(options: ImageApiClientOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
      throw new UserError('api_key_missing', 'image API key is empty');
    }
    this.#apiKey = options.apiKey;
    this.#baseUrl = parseBaseUrl(options.baseUrl);
    this.#userAgent = options.userAgent ?? 'pixelmill/0.1';
    this.#now = options.now ?? Date.now;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        connections: options.connections ?? 16,
        connectTimeout: options.connectTimeoutMs ?? 10_000,
        headersTimeout: options.headersTimeoutMs ?? 30_000,
        bodyTimeout: options.bodyTimeoutMs ?? 30_000,
        // Below Node's default server keep-alive (5 s), so we rarely reuse a socket the server is
        // closing: undici cannot replay a POST that hit such a socket, and submit must not repeat.
        keepAliveTimeout: 4_000,
      });
    // Result hosts (CDNs, object stores) may redirect; the API itself is never followed.
    this.#downloads = this.#dispatcher.compose(interceptors.redirect({ maxRedirections: 3 }));
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
    const ctx = this.#context(ENDPOINTS.submit, '/v1/images/generations');
    const checked = GenerationRequestSchema.safeParse(request);
    if (!checked.success) {
      const problems = checked.error.issues.map((i) => `${i.path.join('.') || '(request)'}: ${i.message}`);
      throw this.#rejected(ctx, `invalid generation request: ${problems.join('; ')}`);
    }
    const raw = await this.#call(ctx, {
      method: 'POST',
      body: request,
      schema: SubmitAckSchema,
      signal: opts.signal,
      ...(opts.idempotencyKey !== undefined ? { headers: { 'idempotency-key': opts.idempotencyKey } } : {}),
    });
    if (raw.data.length === 0) {
      this.#countFailure(ctx.endpoint);
      throw new InvalidResponseError(`${ctx.target} returned an invalid response: no task ids`, {
        endpoint: ctx.endpoint,
        outcomeUnknown: true,
      });
    }
    return { taskIds: raw.data.map((item) => item.task_id), raw };
  }

  /** The task's current state. Unknown status values are returned as they came. */
  async getTask(id: string, opts: { language?: Language; signal?: AbortSignal } = {}): Promise<Task> {
    const ctx = this.#context(ENDPOINTS.getTask, `/v1/tasks/${encodeURIComponent(id)}`);
    if (id === '') throw this.#rejected(ctx, 'task id is empty');
    const query = opts.language === undefined ? undefined : { language: opts.language };
    const envelope = await this.#call(ctx, {
      method: 'GET',
      schema: TaskEnvelopeSchema,
      query,
      signal: opts.signal,
    });
    if (envelope.data.id !== id) {
      this.#countFailure(ctx.endpoint);
      throw new InvalidResponseError(
        `${ctx.target} returned an invalid response: it describes another task`,
        {
          endpoint: ctx.endpoint,
        },
      );
    }
    return envelope.data;
  }

  /** Id and status of 1..500 tasks (never results). */
  async batchLookup(ids: string[], opts: { signal?: AbortSignal } = {}): Promise<BatchItem[]> {
    const ctx = this.#context(ENDPOINTS.batchLookup, '/v1/tasks/batch');
    if (ids.length < 1 || ids.length > MAX_BATCH_IDS) {
      throw this.#rejected(ctx, `task_ids must hold 1 to ${MAX_BATCH_IDS} ids, got ${ids.length}`);
    }
    const body = { task_ids: ids };
    const envelope = await this.#call(ctx, {
      method: 'POST',
      body,
      schema: BatchEnvelopeSchema,
      signal: opts.signal,
    });
    return envelope.data;
  }

  /** Streams a result image. No credentials are sent: the result host may be another origin. */
  async downloadResult(url: string, opts: { signal?: AbortSignal } = {}): Promise<DownloadedResult> {
    this.#countCall(RESULT_ENDPOINT);
    try {
      return await downloadResult(this.#downloads, url, {
        ...opts,
        userAgent: this.#userAgent,
        now: this.#now,
        redact: (text) => this.#redact(text),
      });
    } catch (error) {
      this.#countFailure(RESULT_ENDPOINT);
      throw error;
    }
  }

  /**
   * Calls made so far, by endpoint template; a failed call counts in both fields. A download
   * whose stream fails later (truncation) counts as a successful call here.
   */
  stats(): Record<string, EndpointStats> {
    return Object.fromEntries([...this.#stats].map(([endpoint, s]) => [endpoint, { ...s }]));
  }

  /** Closes the connection pool if the client created it. */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  #context(endpoint: string, path: string): RequestContext & { path: string } {
    return {
      endpoint,
      path,
      target: `${endpoint.split(' ')[0]} ${path}`,
      redact: (text) => this.#redact(text),
      now: this.#now,
    };
  }

  #rejected(ctx: RequestContext, why: string): InvalidRequestError {
    return new InvalidRequestError(`${ctx.target} not sent: ${this.#redact(why)}`, {
      endpoint: ctx.endpoint,
    });
  }

  #redact(text: string): string {
    return text.split(this.#apiKey).join(REDACTED);
  }

  #entry(endpoint: string): EndpointStats {
    let entry = this.#stats.get(endpoint);
    if (entry === undefined) {
      entry = { calls: 0, failures: 0 };
      this.#stats.set(endpoint, entry);
    }
    return entry;
  }

  #countCall(endpoint: string): void {
    this.#entry(endpoint).calls += 1;
  }

  #countFailure(endpoint: string): void {
    this.#entry(endpoint).failures += 1;
  }

  async #call<S extends z.ZodType>(
    ctx: RequestContext & { path: string },
    call: {
      method: 'GET' | 'POST';
      schema: S;
      body?: unknown;
      query?: Record<string, string>;
      signal?: AbortSignal;
      headers?: Record<string, string>;
    },
  ) {
    // Relative to the base so that a base path (https://host/gateway/) is kept.
    const url = new URL(ctx.path.replace(/^\//, ''), this.#baseUrl);
    for (const [name, value] of Object.entries(call.query ?? {})) url.searchParams.set(name, value);
    this.#countCall(ctx.endpoint);
    try {
      return await callJson(this.#dispatcher, ctx, {
        ...call,
        url,
        headers: {
          ...call.headers,
          authorization: `Bearer ${this.#apiKey}`,
          accept: 'application/json',
          'user-agent': this.#userAgent,
        },
      });
    } catch (error) {
      this.#countFailure(ctx.endpoint);
      throw error;
    }
  }
}

function parseBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UserError('api_base_url_invalid', `image API base URL is not a URL: "${baseUrl}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UserError('api_base_url_invalid', `image API base URL must be http(s): "${baseUrl}"`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UserError('api_base_url_invalid', 'image API base URL must not contain credentials');
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  url.search = '';
  url.hash = '';
  return url;
}

export function createImageApiClient(options: ImageApiClientOptions): ImageApiClient {
  return new ImageApiClient(options);
}
