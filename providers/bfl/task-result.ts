// BFL's word about a task (get_result's answer, or a webhook's body) in pixelmill's words, one
// reading for both so that a poll and a webhook tell a shard the same thing:
//   Ready / SUCCESS                 -> completed, with result.sample and when that URL expires
//   Pending                         -> pending
//   Request / Content Moderated     -> failed, content_policy_violation (code: the status), cost 0
//   Error / FAILED                  -> failed, generation_error (code: BFL's error code or status)
//   Task not found                  -> not_found
// Anything else is carried as it came ("not finished yet" for the workflow).
import type { ErrorSummary, TaskResult } from '../../common/types.js';
import type { TaskState } from '../types.js';
import { BFL_STATUS, sampleOf } from './wire.js';

/** How long a `result.sample` URL works: "signed URLs are only valid for 10 minutes". */
export const SAMPLE_URL_LIFE_MS = 10 * 60_000;

/** The fields of an answer or a webhook that say how a task is. */
export interface BflTaskWord {
  status: string;
  result?: unknown;
  details?: unknown;
  error?: unknown;
  message?: unknown;
  cost?: unknown;
}

/** The notice's success and failure words (the smaller webhook body). */
const SUCCESS = 'SUCCESS';
const FAILED = 'FAILED';
const MODERATED: readonly string[] = [BFL_STATUS.requestModerated, BFL_STATUS.contentModerated];
const CONTENT_POLICY = 'content_policy_violation';

/**
 * When a sample URL stops working: 10 minutes after `fromMs` (when it was handed out), or sooner
 * when the URL's own expiry says so (`se`, the expiry of the Azure Blob signatures BFL's delivery
 * URLs are): the earlier of the two, since either one ends it.
 */
export function sampleExpiry(url: string, fromMs: number): number {
  const documented = fromMs + SAMPLE_URL_LIFE_MS;
  let se: string | null = null;
  try {
    se = new URL(url).searchParams.get('se');
  } catch {
    return documented;
  }
  const signed = se === null ? NaN : Date.parse(se);
  return Number.isNaN(signed) ? documented : Math.min(documented, signed);
}

/**
 * The task's state and, when finished, its result. A Ready task whose word carries no sample URL
 * is `completed` without a result: the caller decides whether that is an answer (a webhook: the
 * shard polls once) or a broken one (a poll).
 */
export function taskStateOf(word: BflTaskWord, nowMs: number): TaskState {
  const { status } = word;
  if (status === BFL_STATUS.ready || status === SUCCESS) {
    const sample = sampleOf(word.result);
    if (sample === undefined) return { status: 'completed' };
    const result: TaskResult = {
      status: 'completed',
      urls: [sample],
      expiresAt: sampleExpiry(sample, nowMs),
    };
    return { status: 'completed', result: withCost(result, word.cost) };
  }
  if (status === BFL_STATUS.pending) return { status: 'pending' };
  if (status === BFL_STATUS.notFound) return { status: 'not_found' };
  if (MODERATED.includes(status) || status === BFL_STATUS.error || status === FAILED) {
    const error = failureOf(word);
    const result: TaskResult = { status: 'failed', error };
    // "Request Moderated / Content Moderated: not charged" (help.bfl.ai); an Error's charge is not said.
    if (MODERATED.includes(error.code)) result.creditsCost = 0;
    return { status: 'failed', result: withCost(result, word.cost) };
  }
  return { status };
}

/** A failed task's error in the report's words, BFL's own status or code kept as `code`. */
export function failureOf(word: BflTaskWord): ErrorSummary {
  const said = text(word.error);
  // The notice's FAILED names BFL's status in `error` ("Content Moderated", "Error").
  const status = word.status === FAILED && said !== undefined ? said : word.status;
  const detail = detailOf(word, status);
  if (MODERATED.includes(status)) {
    const what = status === BFL_STATUS.requestModerated ? 'the request' : 'the generated image';
    return {
      type: CONTENT_POLICY,
      code: status,
      message: `BFL's moderation refused ${what}${detail ? `: ${detail}` : ''}`,
    };
  }
  // A code word in `error` (BFL's integration notes: content_policy_violation, internal_error...).
  const code = said !== undefined && /^[a-z][a-z0-9_]*$/.test(said) ? said : status;
  return {
    type: code === CONTENT_POLICY ? CONTENT_POLICY : 'generation_error',
    code,
    message: `BFL's generation failed${detail ? `: ${detail}` : ''}`,
  };
}

/** What the word says about why, in one line: its message, `details.error` or moderation reasons. */
function detailOf(word: BflTaskWord, status: string): string | undefined {
  const parts: string[] = [];
  const message = text(word.message);
  if (message !== undefined) parts.push(message);
  if (typeof word.details === 'object' && word.details !== null) {
    const details = word.details as Record<string, unknown>;
    const error = text(details.error);
    if (error !== undefined) parts.push(error);
    const reasons = details['Moderation Reasons'];
    if (Array.isArray(reasons)) {
      const named = reasons.filter((reason): reason is string => typeof reason === 'string');
      if (named.length > 0) parts.push(named.join(', '));
    }
  }
  const error = text(word.error);
  if (parts.length === 0 && error !== undefined && error !== status) parts.push(error);
  const line = parts.join('; ').replace(/\s+/g, ' ').trim();
  return line === '' ? undefined : line.slice(0, 300);
}

function withCost(result: TaskResult, cost: unknown): TaskResult {
  if (typeof cost === 'number' && Number.isFinite(cost) && cost >= 0) result.creditsCost = cost;
  return result;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}
