// The prediction routes other than create: GET /v1/predictions/{id}, POST .../{id}/cancel,
// GET /v1/predictions (the list), and GET /v1/webhooks/default/secret. A prediction of another
// account is not found, as on the API.
import type { AccountConfig } from '../config.js';
import type { ReplicateContext } from '../context.js';
import { decodeCursor, encodeCursor, paginate, type Cursor } from '../cursor.js';
import type { Prediction } from '../predictions.js';
import { predictionJson } from '../view.js';
import {
  badRequest,
  notFound,
  ReplicateApiError,
  type PredictionJson,
  type PredictionPage,
} from '../wire.js';

function owned(ctx: ReplicateContext, account: AccountConfig, id: string): Prediction {
  const job = ctx.store.get(id);
  if (!job || job.account !== account.username) throw notFound();
  return job;
}

export function handleGet(ctx: ReplicateContext, account: AccountConfig, id: string): PredictionJson {
  return predictionJson(ctx.view, owned(ctx, account, id), ctx.clock.now());
}

/** Cancels a prediction that has not ended; an ended one is answered as it is. */
export function handleCancel(ctx: ReplicateContext, account: AccountConfig, id: string): PredictionJson {
  const job = owned(ctx, account, id);
  ctx.store.cancel(job);
  return predictionJson(ctx.view, job, ctx.clock.now());
}

export function handleSecret(account: AccountConfig): { key: string } {
  return { key: account.webhook_secret };
}

/** An ISO 8601 date-time filter, in ms; a date alone means its midnight UTC. */
function timeFilter(query: URLSearchParams, name: string): number | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)
    ? Date.parse(/[T ]\d{2}:\d{2}/.test(value) && !/(Z|[+-]\d{2}:?\d{2})$/.test(value) ? `${value}Z` : value)
    : Number.NaN;
  if (Number.isNaN(ms))
    throw badRequest(`${name} must be an ISO 8601 date-time, such as 2025-01-01T00:00:00Z.`);
  return ms;
}

/**
 * GET /v1/predictions: the account's predictions, newest first, `page_size` a page, filtered by
 * created_after (at or after) and created_before (before); `next`/`previous` keep the filters.
 */
export function handleList(
  ctx: ReplicateContext,
  account: AccountConfig,
  query: URLSearchParams,
): PredictionPage {
  const after = timeFilter(query, 'created_after');
  const before = timeFilter(query, 'created_before');
  const encoded = query.get('cursor');
  let cursor: Cursor | undefined;
  if (encoded !== null) {
    cursor = decodeCursor(encoded);
    if (!cursor) throw new ReplicateApiError(404, { detail: 'Invalid cursor' });
  }
  const source = query.get('source');
  const all = ctx.store.values();
  const mine: Prediction[] = [];
  // Every prediction here came from the API: a `source=web` filter leaves none.
  if (source !== 'web') {
    for (let i = all.length - 1; i >= 0; i--) {
      const job = all[i]!;
      const created = job.record.submittedAt;
      if (job.account !== account.username) continue;
      if ((after !== undefined && created < after) || (before !== undefined && created >= before)) continue;
      mine.push(job);
    }
    // Newest first; equal times keep creation order reversed, the same on every call.
    mine.sort((a, b) => b.record.submittedAt - a.record.submittedAt || b.seq - a.seq);
  }
  const { page, next, previous } = paginate(
    mine,
    cursor,
    ctx.config.list.page_size,
    (job) => job.record.submittedAt,
  );
  const now = ctx.clock.now();
  const link = (to: Cursor | null): string | null => {
    if (!to) return null;
    const params = new URLSearchParams(query);
    params.set('cursor', encodeCursor(to));
    // Django's replace_query_param writes the parameters sorted by name.
    params.sort();
    return `${ctx.view.apiBaseUrl}/v1/predictions?${params.toString()}`;
  };
  return {
    next: link(next),
    previous: link(previous),
    results: page.map((job) => predictionJson(ctx.view, job, now, 'list')),
  };
}
