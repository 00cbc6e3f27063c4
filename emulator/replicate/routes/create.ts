// POST /v1/predictions and POST /v1/models/{owner}/{name}/predictions: validate (create-request.ts),
// check the credit, create the prediction, arm its webhooks, and answer 201 with it; with
// `Prefer: wait[=n]`, after holding the request until it ends or n seconds pass (sync-wait.ts).
// A `Cancel-After` header sets its deadline.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AccountConfig } from '../config.js';
import type { ReplicateContext } from '../context.js';
import { validateCreate, type CreateRoute, type ParsedJson } from '../create-request.js';
import { parseCancelAfter, parsePrefer } from '../headers.js';
import { predictionJson } from '../view.js';
import { badRequest, insufficientCredit, type PredictionJson } from '../wire.js';

export interface CreateReply {
  status: 201;
  body: PredictionJson;
  headers: Record<string, string>;
  /** The lost-create-response fault: the prediction exists, the answer is never sent. */
  drop: boolean;
}

export async function handleCreate(
  ctx: ReplicateContext,
  req: IncomingMessage,
  res: ServerResponse,
  account: AccountConfig,
  route: CreateRoute,
  body: ParsedJson,
): Promise<CreateReply> {
  const { config, clock, store } = ctx;
  const valid = validateCreate(body, route, {
    models: config.models,
    requireHttps: config.webhooks.require_https,
    defaultEvents: config.webhooks.default_events,
  });
  const cancelAfterHeader = req.headers['cancel-after'];
  let cancelAfter: number | null = null;
  if (cancelAfterHeader !== undefined) {
    const parsed = parseCancelAfter(
      Array.isArray(cancelAfterHeader) ? cancelAfterHeader.join(',') : cancelAfterHeader,
    );
    if (!parsed.ok) throw badRequest(`Invalid Cancel-After header: ${parsed.reason}.`);
    cancelAfter = parsed.seconds;
  }
  if (store.balance(account.username, clock.now()) <= 0) throw insufficientCredit();

  const job = store.create(account, valid, cancelAfter);
  ctx.webhooks.watch(job, true);
  const headers: Record<string, string> = { location: `${ctx.view.apiBaseUrl}/v1/predictions/${job.id}` };
  const lostRate = config.faults.lost_create_response_rate;
  if (lostRate > 0 && ctx.faultRandom() < lostRate) {
    ctx.stats.fault('lost_create_response');
    return { status: 201, body: predictionJson(ctx.view, job, clock.now()), headers, drop: true };
  }
  const wait = parsePrefer(req.headers.prefer);
  if (wait) {
    headers['preference-applied'] = wait.applied;
    const aborted = new AbortController();
    const onClose = (): void => aborted.abort();
    res.once('close', onClose);
    await ctx.waits.hold(
      job,
      job.record.submittedAt + Math.round(wait.seconds * 1000 * config.time_scale),
      aborted.signal,
    );
    res.off('close', onClose);
  }
  return { status: 201, body: predictionJson(ctx.view, job, clock.now()), headers, drop: false };
}
