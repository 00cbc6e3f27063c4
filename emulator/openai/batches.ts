// A batch's whole future, drawn when it is created from a seeded stream of its own (so a restarted
// emulator replaying its journal draws the same): how long validation takes and whether it fails,
// when each request runs and how it ends, when the batch finalizes, and when it expires (24 h scaled
// by time_scale, or once `expire_at_fraction` of its requests have run). Its status at any instant
// is then a function of the clock, as core's job simulator does for jobs: no timer per request.
//
// validating -> in_progress -> finalizing -> completed, or validating -> failed, or in_progress ->
// expired, or (validating | in_progress) -> cancelling -> cancelled. A request has run when it
// finished before the batch stopped running (completed: all; expired: at expiry; cancelled: at the
// cancel); the rest are in the error file as batch_expired or batch_cancelled.
import { randomStream, uniform, type Random } from '../core/index.js';
import type { OpenAIConfig } from './config.js';
import { moderationBlockedBody, SERVER_ERROR_BODY, type ErrorBody } from './errors.js';
import { derivedFileId, digest, seedOf } from './ids.js';
import { hasBlockedWord, outputTokens, type ImageRequest } from './image-request.js';
import type { BatchError, InputRequest } from './input.js';

export const BATCH_STATUSES = [
  'validating',
  'failed',
  'in_progress',
  'finalizing',
  'completed',
  'expired',
  'cancelling',
  'cancelled',
] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

export interface PlannedRequest {
  customId: string;
  line: number;
  /** null: the body was refused (its 400 is in `error`). */
  request: ImageRequest | null;
  /** ms: when it finishes if the batch is still running then. */
  finishAt: number;
  ok: boolean;
  /** A failed request's status and body, as the error file carries them. */
  error: { status: number; body: ErrorBody } | null;
  /** `response.request_id` and the line's `batch_req_` id. */
  requestId: string;
  /** A succeeded request whose output line is served damaged (`batches.damaged_line_words`). */
  damage?: 'malformed' | 'undecodable';
}

export interface BatchRecord {
  id: string;
  /** Creation order across the emulator (0-based): what fault lists name. */
  index: number;
  account: string;
  inputFileId: string;
  endpoint: string;
  completionWindow: string;
  metadata: Record<string, string> | null;
  model: string | null;
  createdAt: number;
  validatedAt: number;
  /** Non-null: the batch fails at validatedAt with these. */
  errors: BatchError[] | null;
  requests: PlannedRequest[];
  /** Finish times of the requests that succeed / fail, sorted, for counting at an instant. */
  successTimes: Float64Array;
  failureTimes: Float64Array;
  lastFinishAt: number;
  finalizedAt: number;
  /** What expires_at shows. */
  expiresAt: number;
  /** When it really expires; Infinity when it completes first. */
  expiryAt: number;
  cancelAt: number | undefined;
  cancelledAt: number | undefined;
  outputFileId: string;
  errorFileId: string;
  /** What it adds to the account's enqueued total while it runs. */
  enqueued: number;
}

export interface BatchEnd {
  status: 'completed' | 'expired' | 'cancelled' | 'failed';
  /** When it reaches that status. */
  at: number;
  /** Requests that finished at or before this ran; later ones did not. */
  cutoff: number;
}

export interface NewBatch {
  id: string;
  index: number;
  account: string;
  inputFileId: string;
  endpoint: string;
  completionWindow: string;
  metadata: Record<string, string> | null;
  createdAt: number;
  /** The input as read, or the problems that fail it. */
  input: { requests: InputRequest[]; errors: BatchError[] };
}

const scaled = (seconds: number, timeScale: number): number => seconds * 1000 * timeScale;

function picked(pick: { rate: number; batches: number[] }, index: number, random: Random): boolean {
  const draw = random();
  return pick.batches.includes(index) || draw < pick.rate;
}

/** Draws the batch's future; `enqueuedAt(t)` is what the account's other batches hold at t. */
export function planBatch(
  spec: NewBatch,
  config: OpenAIConfig,
  enqueuedAt: (account: string, at: number) => number,
): BatchRecord {
  const { batches: knobs, time_scale: timeScale } = config;
  const random = randomStream(seedOf(config.seed, 'batch', spec.index), 0);
  const validatedAt = spec.createdAt + scaled(uniform(random, knobs.validation_seconds), timeScale);
  const duration = scaled(uniform(random, knobs.batch_duration), timeScale);
  const finalizing = scaled(uniform(random, knobs.finalizing_seconds), timeScale);
  const failValidation = picked(knobs.fail_validation, spec.index, random);
  const allFail = picked(knobs.all_requests_fail, spec.index, random);
  const expiresAt = spec.createdAt + scaled(knobs.completion_window_hours * 3600, timeScale);

  let errors: BatchError[] | null = spec.input.errors.length > 0 ? spec.input.errors : null;
  if (!errors && failValidation)
    errors = [
      {
        code: 'invalid_request',
        line: null,
        message: 'The batch input file could not be validated. Please check the file and try again.',
        param: null,
      },
    ];
  const requests = errors
    ? []
    : spec.input.requests.map((input, i) => planRequest(spec, config, input, i, random));
  if (allFail)
    for (const request of requests) if (request.ok) Object.assign(request, failed(500, SERVER_ERROR_BODY));
  // Spread over the drawn duration, the last request finishing at its end.
  const draws = requests.map(() => random());
  const longest = draws.reduce((a, b) => Math.max(a, b), Number.MIN_VALUE);
  requests.forEach((request, i) => (request.finishAt = validatedAt + (draws[i]! / longest) * duration));

  const times = requests.map((r) => r.finishAt).sort((a, b) => a - b);
  const lastFinishAt = times.at(-1) ?? validatedAt;
  let expiryAt = lastFinishAt > expiresAt ? expiresAt : Infinity;
  let shownExpiry = expiresAt;
  if (knobs.expire_at_fraction !== null && requests.length > 0) {
    const ran = Math.ceil(knobs.expire_at_fraction * requests.length);
    if (ran < requests.length) {
      expiryAt = Math.min(expiryAt, ran === 0 ? validatedAt : times[ran - 1]!);
      shownExpiry = expiryAt;
    }
  }
  const sorted = (ok: boolean): Float64Array =>
    Float64Array.from(requests.filter((r) => r.ok === ok).map((r) => r.finishAt)).sort();

  const record: BatchRecord = {
    id: spec.id,
    index: spec.index,
    account: spec.account,
    inputFileId: spec.inputFileId,
    endpoint: spec.endpoint,
    completionWindow: spec.completionWindow,
    metadata: spec.metadata,
    model: requests.find((r) => r.request !== null)?.request?.model ?? null,
    createdAt: spec.createdAt,
    validatedAt,
    errors,
    requests,
    successTimes: sorted(true),
    failureTimes: sorted(false),
    lastFinishAt,
    finalizedAt: lastFinishAt + finalizing,
    expiresAt: shownExpiry,
    expiryAt,
    cancelAt: undefined,
    cancelledAt: undefined,
    outputFileId: derivedFileId(config.seed, spec.id, 'output'),
    errorFileId: derivedFileId(config.seed, spec.id, 'error'),
    enqueued: enqueuedUnits(requests, config.limits.enqueued.unit),
  };
  const limit = config.limits.enqueued.limit;
  if (!record.errors && limit !== null && enqueuedAt(spec.account, validatedAt) + record.enqueued > limit) {
    record.errors = [enqueuedLimitError(record, config)];
    record.requests = [];
    record.successTimes = new Float64Array();
    record.failureTimes = new Float64Array();
  }
  return record;
}

function failed(status: number, body: ErrorBody): Pick<PlannedRequest, 'ok' | 'error'> {
  return { ok: false, error: { status, body } };
}

function planRequest(
  spec: NewBatch,
  config: OpenAIConfig,
  input: InputRequest,
  i: number,
  random: Random,
): PlannedRequest {
  const knobs = config.batches;
  const requestId = digest(config.seed, spec.id, i);
  const moderationDraw = random();
  const failureDraw = random();
  const base = { customId: input.customId, line: input.line, finishAt: 0, requestId };
  if ('refused' in input.request) return { ...base, request: null, ...failed(400, input.request.refused) };
  const request = input.request;
  if (hasBlockedWord(request.prompt, knobs.moderation_words) || moderationDraw < knobs.moderation_rate)
    return { ...base, request, ...failed(400, moderationBlockedBody(requestId)) };
  if (failureDraw < knobs.request_failure_rate)
    return { ...base, request, ...failed(500, SERVER_ERROR_BODY) };
  const { malformed, undecodable } = knobs.damaged_line_words;
  if (hasBlockedWord(request.prompt, malformed))
    return { ...base, request, ok: true, error: null, damage: 'malformed' };
  if (hasBlockedWord(request.prompt, undecodable))
    return { ...base, request, ok: true, error: null, damage: 'undecodable' };
  return { ...base, request, ok: true, error: null };
}

function enqueuedUnits(requests: PlannedRequest[], unit: OpenAIConfig['limits']['enqueued']['unit']): number {
  if (unit === 'requests') return requests.length;
  let total = 0;
  for (const { request } of requests) {
    if (!request) continue;
    total += unit === 'images' ? request.n : outputTokens(request) + Math.ceil(request.prompt.length / 4);
  }
  return total;
}

function enqueuedLimitError(batch: BatchRecord, config: OpenAIConfig): BatchError {
  const { unit, limit } = config.limits.enqueued;
  const words = unit === 'tokens' ? 'enqueued tokens' : `enqueued ${unit}`;
  return {
    code: 'token_limit_exceeded',
    line: null,
    message: `Enqueued token limit reached for ${batch.model ?? 'gpt-image-1'} in organization ${batch.account}. Limit: ${limit!.toLocaleString('en-US')} ${words}. Please try again once some in_progress batches have been completed.`,
    param: null,
  };
}

/** How the batch ends (as things stand: a cancel may still change it). */
export function endOf(batch: BatchRecord): BatchEnd {
  if (batch.cancelAt !== undefined) {
    const natural = batch.expiryAt < batch.lastFinishAt ? batch.expiryAt : batch.lastFinishAt;
    return { status: 'cancelled', at: batch.cancelledAt!, cutoff: Math.min(batch.cancelAt, natural) };
  }
  if (batch.errors) return { status: 'failed', at: batch.validatedAt, cutoff: -Infinity };
  if (batch.expiryAt < batch.lastFinishAt)
    return { status: 'expired', at: batch.expiryAt, cutoff: batch.expiryAt };
  return { status: 'completed', at: batch.finalizedAt, cutoff: batch.lastFinishAt };
}

export function statusAt(batch: BatchRecord, now: number): BatchStatus {
  if (batch.cancelAt !== undefined && now >= batch.cancelAt)
    return now < batch.cancelledAt! ? 'cancelling' : 'cancelled';
  if (now < batch.validatedAt) return 'validating';
  if (batch.errors) return 'failed';
  if (batch.expiryAt < batch.lastFinishAt) return now < batch.expiryAt ? 'in_progress' : 'expired';
  if (now < batch.lastFinishAt) return 'in_progress';
  return now < batch.finalizedAt ? 'finalizing' : 'completed';
}

/** Ended: its files exist (or it failed). */
export function hasEnded(batch: BatchRecord, now: number): boolean {
  const end = endOf(batch);
  return now >= end.at;
}

/** Whether request `r` ran, given the batch's end. */
export const ran = (request: PlannedRequest, end: BatchEnd): boolean => request.finishAt <= end.cutoff;

/** Sorted `times` at or before `at`. */
function countUpTo(times: Float64Array, at: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function requestCounts(
  batch: BatchRecord,
  now: number,
): { total: number; completed: number; failed: number } {
  if (now < batch.validatedAt || batch.errors) return { total: 0, completed: 0, failed: 0 };
  const upTo = Math.min(now, endOf(batch).cutoff);
  return {
    total: batch.requests.length,
    completed: countUpTo(batch.successTimes, upTo),
    failed: countUpTo(batch.failureTimes, upTo),
  };
}

/** A cancel at `now`, with `cancellingMs` until cancelled; only while validating or in progress. */
export function cancelBatch(batch: BatchRecord, now: number, cancellingMs: number): void {
  batch.cancelAt = now;
  batch.cancelledAt = now + cancellingMs;
}

/** The account's batches' enqueued total at `at`: those validated and still running then. */
export function enqueuedTotal(batches: Iterable<BatchRecord>, account: string, at: number): number {
  let total = 0;
  for (const batch of batches) {
    if (batch.account !== account || batch.errors || at < batch.validatedAt) continue;
    if (at < Math.min(endOf(batch).cutoff, batch.lastFinishAt)) total += batch.enqueued;
  }
  return total;
}

/** The seeded stream a cancel of batch `index` draws its cancelling time from. */
export function cancelStream(seed: number, index: number): Random {
  return randomStream(seedOf(seed, 'cancel', index), 0);
}
