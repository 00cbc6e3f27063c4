// The Batch API: POST /v1/batches `{input_file_id, endpoint, completion_window, metadata}`, GET
// /v1/batches/{id}, GET /v1/batches (newest first, `after`, `limit` 1-100 default 20, `has_more`,
// `first_id`, `last_id`), POST /v1/batches/{id}/cancel. A create is checked at once (400 for a bad
// parameter, 404 for an unknown file); the input file itself is read then and its problems fail the
// batch when its validation ends, as the API reports them in `errors`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, sendJson } from '../../core/index.js';
import type { OpenAIKey } from '../auth.js';
import {
  cancelBatch,
  cancelStream,
  endOf,
  enqueuedTotal,
  planBatch,
  requestCounts,
  statusAt,
  type BatchRecord,
  type NewBatch,
} from '../batches.js';
import { batchFileExists, type OpenAIContext } from '../context.js';
import {
  invalidRequest,
  invalidType,
  invalidValue,
  missingParameter,
  noSuchBatch,
  noSuchFile,
  rateLimited,
} from '../errors.js';
import { hex32 } from '../ids.js';
import { readInput } from '../input.js';
import { uniform } from '../../core/index.js';

/** The endpoints the Batch API takes; this emulator runs only the images one. */
export const BATCH_ENDPOINTS = [
  '/v1/responses',
  '/v1/chat/completions',
  '/v1/embeddings',
  '/v1/completions',
  '/v1/moderations',
  '/v1/images/generations',
  '/v1/images/edits',
] as const;
const EMULATED_ENDPOINT = '/v1/images/generations';
const MAX_METADATA_PAIRS = 16;
const MAX_METADATA_KEY = 64;
const MAX_METADATA_VALUE = 512;

const seconds = (ms: number | undefined): number | null =>
  ms === undefined || !Number.isFinite(ms) ? null : Math.floor(ms / 1000);

/** The Batch object, as it stands at `now`. */
export function batchJson(batch: BatchRecord, now: number): Record<string, unknown> {
  const status = statusAt(batch, now);
  const end = endOf(batch);
  const ended = now >= end.at;
  const at = (ms: number, reached: boolean): number | null => (reached ? seconds(ms) : null);
  const cancelled = batch.cancelAt !== undefined && now >= batch.cancelAt;
  const natural = !cancelled && !batch.errors;
  return {
    id: batch.id,
    object: 'batch',
    endpoint: batch.endpoint,
    model: batch.model,
    errors:
      batch.errors && now >= batch.validatedAt && !cancelled ? { object: 'list', data: batch.errors } : null,
    input_file_id: batch.inputFileId,
    completion_window: batch.completionWindow,
    status,
    output_file_id: ended && batchFileExists(batch, 'output', now) ? batch.outputFileId : null,
    error_file_id: ended && batchFileExists(batch, 'error', now) ? batch.errorFileId : null,
    created_at: seconds(batch.createdAt),
    in_progress_at: at(
      batch.validatedAt,
      !batch.errors && now >= batch.validatedAt && !(cancelled && batch.cancelAt! < batch.validatedAt),
    ),
    expires_at: seconds(batch.expiresAt),
    finalizing_at: at(batch.lastFinishAt, natural && end.status === 'completed' && now >= batch.lastFinishAt),
    completed_at: at(end.at, natural && end.status === 'completed' && ended),
    failed_at: at(batch.validatedAt, batch.errors !== null && !cancelled && now >= batch.validatedAt),
    expired_at: at(end.at, natural && end.status === 'expired' && ended),
    cancelling_at: at(batch.cancelAt ?? 0, cancelled),
    cancelled_at: at(batch.cancelledAt ?? 0, cancelled && now >= batch.cancelledAt!),
    request_counts: requestCounts(batch, now),
    metadata: batch.metadata,
  };
}

function checkMetadata(value: unknown): Record<string, string> | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidType('metadata', 'an object', value);
  const entries = Object.entries(value);
  if (entries.length > MAX_METADATA_PAIRS)
    throw invalidRequest(
      `Invalid 'metadata': too many properties. Expected an object with at most ${MAX_METADATA_PAIRS} properties, but got an object with ${entries.length} properties instead.`,
      'metadata',
      'object_above_max_properties',
    );
  for (const [key, v] of entries) {
    if (key.length > MAX_METADATA_KEY)
      throw invalidRequest(
        `Invalid 'metadata': string too long. Expected a key with maximum length ${MAX_METADATA_KEY}.`,
        'metadata',
        'string_above_max_length',
      );
    if (typeof v !== 'string') throw invalidType(`metadata.${key}`, 'a string', v);
    if (v.length > MAX_METADATA_VALUE)
      throw invalidRequest(
        `Invalid 'metadata.${key}': string too long. Expected a string with maximum length ${MAX_METADATA_VALUE}, but got a string with length ${v.length} instead.`,
        `metadata.${key}`,
        'string_above_max_length',
      );
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

export async function createBatch(
  ctx: OpenAIContext,
  req: IncomingMessage,
  res: ServerResponse,
  key: OpenAIKey,
): Promise<void> {
  const body = await readJsonBody(req);
  if (
    body.kind !== 'json' ||
    typeof body.value !== 'object' ||
    body.value === null ||
    Array.isArray(body.value)
  )
    throw invalidRequest(
      body.kind === 'invalid_json'
        ? "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)"
        : 'The body of the request must be a JSON object.',
    );
  const fields = body.value as Record<string, unknown>;
  for (const param of ['input_file_id', 'endpoint', 'completion_window'])
    if (fields[param] === undefined) throw missingParameter(param);
  if (typeof fields.input_file_id !== 'string')
    throw invalidType('input_file_id', 'a string', fields.input_file_id);
  if (
    typeof fields.endpoint !== 'string' ||
    !(BATCH_ENDPOINTS as readonly string[]).includes(fields.endpoint)
  )
    throw invalidValue('endpoint', fields.endpoint, BATCH_ENDPOINTS);
  if (fields.endpoint !== EMULATED_ENDPOINT)
    throw invalidRequest(
      `This emulator runs only ${EMULATED_ENDPOINT} batches.`,
      'endpoint',
      'invalid_value',
    );
  if (fields.completion_window !== '24h')
    throw invalidValue('completion_window', fields.completion_window, ['24h']);
  for (const param of Object.keys(fields))
    if (
      !['input_file_id', 'endpoint', 'completion_window', 'metadata', 'output_expires_after'].includes(param)
    )
      throw invalidRequest(`Unknown parameter: '${param}'.`, param, 'unknown_parameter');
  const metadata = checkMetadata(fields.metadata);
  const input = ctx.uploads.get(fields.input_file_id, key.account);
  if (!input) throw noSuchFile(fields.input_file_id);
  if (input.purpose !== 'batch')
    throw invalidRequest(
      "The input file must be uploaded with purpose 'batch'.",
      'input_file_id',
      'invalid_value',
    );

  const rate = ctx.config.faults.create_429_rate;
  if (rate > 0 && ctx.random.create429() < rate) {
    ctx.stats.fault('create_batch_429');
    throw rateLimited(
      { model: 'batch', organization: key.account, unit: 'requests', limit: 100, waitSeconds: 1 },
      ctx.config.limits.retry_after ? { 'retry-after': '1' } : {},
    );
  }

  const spec = {
    id: `batch_${hex32(ctx.random.ids)}`,
    index: ctx.batches.size,
    account: key.account,
    inputFileId: input.id,
    endpoint: fields.endpoint,
    completionWindow: '24h',
    metadata,
    createdAt: ctx.clock.now(),
  };
  ctx.journal?.append({ kind: 'custom', at: spec.createdAt, name: 'batch', payload: spec });
  const batch = addBatch(ctx, spec, input.data);
  sendJson(res, 200, batchJson(batch, ctx.clock.now()));
}

/** Plans and records a batch (a create, or one replayed from the journal). */
export function addBatch(ctx: OpenAIContext, spec: Omit<NewBatch, 'input'>, data: Buffer): BatchRecord {
  const input = readInput(data, spec.endpoint, ctx.config.limits, ctx.config.images.models);
  const batch = planBatch({ ...spec, input }, ctx.config, (account, at) =>
    enqueuedTotal(ctx.batches.values(), account, at),
  );
  ctx.batches.set(batch.id, batch);
  ctx.batchFiles.set(batch.outputFileId, { batch, kind: 'output' });
  ctx.batchFiles.set(batch.errorFileId, { batch, kind: 'error' });
  return batch;
}

function findBatch(ctx: OpenAIContext, id: string, key: OpenAIKey): BatchRecord {
  const batch = ctx.batches.get(id);
  if (!batch || batch.account !== key.account) throw noSuchBatch(id);
  return batch;
}

export function getBatch(ctx: OpenAIContext, res: ServerResponse, id: string, key: OpenAIKey): void {
  sendJson(res, 200, batchJson(findBatch(ctx, id, key), ctx.clock.now()));
}

export function listBatches(
  ctx: OpenAIContext,
  res: ServerResponse,
  query: URLSearchParams,
  key: OpenAIKey,
): void {
  const limit = query.has('limit') ? Number(query.get('limit')) : 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw invalidRequest("Invalid 'limit': must be an integer between 1 and 100.", 'limit', 'invalid_value');
  // Newest first: creation order reversed (ids are random, so `after` names a position).
  let list = [...ctx.batches.values()].filter((b) => b.account === key.account).reverse();
  const after = query.get('after');
  if (after !== null) {
    const at = list.findIndex((b) => b.id === after);
    list = at < 0 ? [] : list.slice(at + 1);
  }
  const now = ctx.clock.now();
  const data = list.slice(0, limit).map((b) => batchJson(b, now));
  sendJson(res, 200, {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: list.length > limit,
  });
}

export function cancel(ctx: OpenAIContext, res: ServerResponse, id: string, key: OpenAIKey): void {
  const batch = findBatch(ctx, id, key);
  const now = ctx.clock.now();
  const status = statusAt(batch, now);
  if (status !== 'cancelling') {
    if (status !== 'validating' && status !== 'in_progress')
      throw invalidRequest(`Cannot cancel a batch with status '${status}'.`);
    applyCancel(ctx, batch, now);
    ctx.journal?.append({ kind: 'custom', at: now, name: 'cancel', payload: { id } });
  }
  sendJson(res, 200, batchJson(batch, now));
}

/** Puts a cancel at `at` in force (a request, or one replayed from the journal). */
export function applyCancel(ctx: OpenAIContext, batch: BatchRecord, at: number): void {
  const random = cancelStream(ctx.config.seed, batch.index);
  const ms = uniform(random, ctx.config.batches.cancelling_seconds) * 1000 * ctx.config.time_scale;
  cancelBatch(batch, at, ms);
  // A cancelled file's content differs from what the natural end would have served.
  ctx.contents.delete(batch.outputFileId);
  ctx.contents.delete(batch.errorFileId);
}
