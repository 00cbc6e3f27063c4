// OpenAI's Files, Batches and Images endpoints behind one keep-alive pool, the key in
// `Authorization: Bearer` and nowhere else. Each method is one HTTP call, classified once
// (api/classify.ts), never retried (Temporal owns retries):
// - Batch mode: `POST /v1/files` (multipart, purpose=batch), `POST /v1/batches`,
//   `GET /v1/batches` (a page, newest first), `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`,
//   and `GET /v1/files/{id}/content` streamed from a byte offset (`Range`);
// - sync mode: `POST /v1/images/generations`, a call held until the images come back as base64.
// OpenAI has no tasks: the task methods of ProviderClient refuse (workflows drive this provider
// by its `submission` capability, never by tasks).
import { Agent, FormData, request, type Dispatcher } from 'undici';
import { ApiHttp } from '../../api/http-client.js';
import { errorFromStatus, errorFromTransport, type RequestContext } from '../../api/classify.js';
import { ImageApiError, InvalidRequestError, InvalidResponseError } from '../../api/errors.js';
import { HttpBackedClient } from '../http-backed-client.js';
import type {
  CallOptions,
  ProviderClient,
  ProviderClientOptions,
  SubmittedTask,
  TaskResult,
  TaskState,
} from '../types.js';
import { GENERATIONS_ENDPOINT } from './batch-lines.js';
import {
  BatchListSchema,
  BatchSchema,
  FileObjectSchema,
  ImagesResponseSchema,
  type Batch,
  type ImagesResponse,
} from './wire.js';

export const ENDPOINTS = {
  uploadFile: 'POST /v1/files',
  createBatch: 'POST /v1/batches',
  listBatches: 'GET /v1/batches',
  getBatch: 'GET /v1/batches/{id}',
  cancelBatch: 'POST /v1/batches/{id}/cancel',
  fileContent: 'GET /v1/files/{id}/content',
  generate: 'POST /v1/images/generations',
} as const;

/** A held generation answers within minutes (tens of seconds at high quality, n images). */
const HELD_CALL_TIMEOUT_MS = 5 * 60_000;
/** Ten high-quality PNGs as base64 stay well under this. */
const MAX_GENERATION_BYTES = 256 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;
/** An id as a path segment: OpenAI's are `batch_…`, `file-…`. */
const OBJECT_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** A file's content from a byte offset on, as a stream. */
export interface FileContent {
  body: AsyncIterable<Uint8Array> & { destroy(error?: Error): unknown };
  /** The file offset of the body's first byte (0 when the server ignored the range). */
  start: number;
  /** The whole file's size, when the answer says (Content-Range, or Content-Length from 0). */
  total?: number;
}

export interface BatchPage {
  batches: Batch[];
  /** The cursor of the next (older) page, when there is one. */
  after?: string;
}

export class OpenAIClient extends HttpBackedClient<ApiHttp> implements ProviderClient {
  readonly provider = 'openai';
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #auth: Record<string, string>;
  readonly #userAgent: string;

  constructor(options: ProviderClientOptions) {
    const dispatcher =
      options.dispatcher ??
      new Agent({
        connections: 16,
        connectTimeout: 10_000,
        headersTimeout: 30_000,
        bodyTimeout: 60_000,
        keepAliveTimeout: 4_000,
      });
    super(
      new ApiHttp({
        ...options,
        dispatcher,
        authHeaders: (key) => ({ authorization: `Bearer ${key}` }),
      }),
    );
    this.#dispatcher = dispatcher;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#auth = { authorization: `Bearer ${options.apiKey}` };
    this.#userAgent = options.userAgent ?? 'pixelmill/0.1';
  }

  /** Uploads a batch's input file (JSONL); its id. */
  async uploadBatchFile(content: Buffer, filename: string, options: CallOptions = {}): Promise<string> {
    const ctx = this.http.context(ENDPOINTS.uploadFile, 'v1/files');
    const form = new FormData();
    form.set('purpose', 'batch');
    form.set('file', new Blob([content], { type: 'application/jsonl' }), filename);
    const text = await this.#raw(ctx, { method: 'POST', body: form, ...options }, async (response) =>
      readText(response.body, MAX_ERROR_BYTES),
    );
    return this.#parse(ctx, text, FileObjectSchema, true).id;
  }

  async createBatch(
    inputFileId: string,
    metadata: Record<string, string>,
    options: CallOptions = {},
  ): Promise<Batch> {
    return this.http.call({
      endpoint: ENDPOINTS.createBatch,
      to: 'v1/batches',
      method: 'POST',
      body: {
        input_file_id: inputFileId,
        endpoint: GENERATIONS_ENDPOINT,
        completion_window: '24h',
        metadata,
      },
      schema: BatchSchema,
      signal: options.signal,
    });
  }

  /** One page of the account's batches, newest first. */
  async listBatches(
    page: { after?: string; limit?: number } = {},
    options: CallOptions = {},
  ): Promise<BatchPage> {
    const query: Record<string, string> = { limit: String(page.limit ?? 100) };
    if (page.after !== undefined) query.after = page.after;
    const answer = await this.http.call({
      endpoint: ENDPOINTS.listBatches,
      to: 'v1/batches',
      method: 'GET',
      query,
      schema: BatchListSchema,
      signal: options.signal,
    });
    const last = answer.last_id ?? answer.data.at(-1)?.id;
    return { batches: answer.data, ...(answer.has_more && last ? { after: last } : {}) };
  }

  async getBatch(id: string, options: CallOptions = {}): Promise<Batch> {
    return this.http.call({
      endpoint: ENDPOINTS.getBatch,
      to: `v1/batches/${this.#id(ENDPOINTS.getBatch, id)}`,
      method: 'GET',
      schema: BatchSchema,
      signal: options.signal,
    });
  }

  async cancelBatch(id: string, options: CallOptions = {}): Promise<Batch> {
    return this.http.call({
      endpoint: ENDPOINTS.cancelBatch,
      to: `v1/batches/${this.#id(ENDPOINTS.cancelBatch, id)}/cancel`,
      method: 'POST',
      schema: BatchSchema,
      signal: options.signal,
    });
  }

  /** A file's content from byte `from` on (a resumed download asks for the rest only). */
  async fileContent(id: string, from = 0, options: CallOptions = {}): Promise<FileContent> {
    const ctx = this.http.context(
      ENDPOINTS.fileContent,
      `v1/files/${this.#id(ENDPOINTS.fileContent, id)}/content`,
    );
    return this.#raw(
      ctx,
      { method: 'GET', headers: from > 0 ? { range: `bytes=${from}-` } : {}, ...options },
      async (response) => {
        const range = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header(response.headers['content-range']) ?? '');
        if (response.statusCode === 206 && range) {
          const total = range[2] === '*' ? undefined : Number(range[2]);
          return { body: response.body, start: Number(range[1]), ...(total !== undefined ? { total } : {}) };
        }
        const length = header(response.headers['content-length']);
        return {
          body: response.body,
          start: 0,
          ...(length !== undefined && /^\d+$/.test(length) ? { total: Number(length) } : {}),
        };
      },
    );
  }

  /** One held generation: the images in the answer's body, base64. */
  async generate(body: Record<string, unknown>, options: CallOptions = {}): Promise<ImagesResponse> {
    const ctx = this.http.context(ENDPOINTS.generate, 'v1/images/generations');
    const text = await this.#raw(
      ctx,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        headersTimeout: HELD_CALL_TIMEOUT_MS,
        ...options,
      },
      async (response) => readText(response.body, MAX_GENERATION_BYTES),
    );
    return this.#parse(ctx, text, ImagesResponseSchema, true);
  }

  submit(): Promise<SubmittedTask> {
    return Promise.reject(this.#noTasks('submit'));
  }

  lookupOne(): Promise<TaskState> {
    return Promise.reject(this.#noTasks('lookupOne'));
  }

  getTask(): Promise<TaskResult> {
    return Promise.reject(this.#noTasks('getTask'));
  }

  cancel(): Promise<void> {
    return Promise.reject(this.#noTasks('cancel'));
  }

  override async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  #noTasks(call: string): InvalidRequestError {
    return new InvalidRequestError(
      `OpenAI has no tasks (${call}): its work goes through batches or held calls (the provider's submission capability)`,
      { endpoint: call },
    );
  }

  #id(endpoint: string, id: string): string {
    if (!OBJECT_ID.test(id))
      throw new InvalidRequestError(`${endpoint} not sent: "${this.http.redact(id)}" is not an OpenAI id`, {
        endpoint,
      });
    return id;
  }

  /** A call outside ApiHttp's JSON calls (multipart, streams, long answers), classified the same way. */
  async #raw<T>(
    ctx: RequestContext & { url: URL },
    call: {
      method: 'GET' | 'POST';
      headers?: Record<string, string>;
      body?: string | FormData;
      signal?: AbortSignal;
      headersTimeout?: number;
    },
    read: (response: Dispatcher.ResponseData) => Promise<T>,
  ): Promise<T> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(ctx.url, {
        dispatcher: this.#dispatcher,
        method: call.method,
        headers: { ...call.headers, ...this.#auth, 'user-agent': this.#userAgent },
        ...(call.body !== undefined ? { body: call.body } : {}),
        ...(call.signal ? { signal: call.signal } : {}),
        ...(call.headersTimeout !== undefined ? { headersTimeout: call.headersTimeout } : {}),
      });
    } catch (error) {
      if (call.signal?.aborted) throw error;
      throw errorFromTransport(ctx, error);
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const text = await readText(response.body, MAX_ERROR_BYTES).catch(() => '');
      throw errorFromStatus(ctx, response.statusCode, response.headers, text);
    }
    try {
      return await read(response);
    } catch (error) {
      if (call.signal?.aborted || error instanceof ImageApiError) throw error;
      throw errorFromTransport(ctx, error);
    }
  }

  #parse<S extends typeof FileObjectSchema | typeof ImagesResponseSchema>(
    ctx: RequestContext,
    text: string,
    schema: S,
    outcomeUnknown: boolean,
  ): ReturnType<S['parse']> {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new InvalidResponseError(`${ctx.target} returned an invalid response: not JSON`, {
        endpoint: ctx.endpoint,
        outcomeUnknown,
      });
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new InvalidResponseError(
        `${ctx.target} returned an invalid response: ${parsed.error.issues[0]?.message ?? 'unexpected shape'}`,
        {
          endpoint: ctx.endpoint,
          outcomeUnknown,
        },
      );
    return parsed.data as ReturnType<S['parse']>;
  }
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The body as text, refused past `limit` bytes. */
async function readText(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) {
      body.destroy();
      throw new InvalidResponseError(`answer exceeds ${limit} bytes`, { endpoint: 'body' });
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}
