// The emulator's own endpoints under /_emulator/ (no auth; not part of Replicate's API): stats,
// the ground truth as NDJSON, and the request limits in force, which a PUT changes on the running
// emulator (fields left out keep their value; `low_credit: null` removes the low-credit limit).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, sendJson, sendNdjson } from '../../core/index.js';
import { LimitsChangeSchema, type LimitsChange } from '../config.js';
import type { ReplicateContext } from '../context.js';
import type { Limits } from '../limits.js';
import { collectStats, groundTruth } from '../stats.js';
import { badRequest } from '../wire.js';

/** Each admin route with the methods it answers, as an Allow header writes them. */
export const ADMIN_ROUTES: ReadonlyMap<string, string> = new Map([
  ['stats', 'GET'],
  ['predictions', 'GET'],
  ['limits', 'GET, PUT'],
]);

/** The limits with `change` applied, or the problems that keep it from applying (none applied then). */
export function changedLimits(limits: Limits, input: unknown): { limits?: Limits; problems: string[] } {
  const result = LimitsChangeSchema.safeParse(input);
  if (!result.success) {
    return {
      problems: result.error.issues.map((issue) =>
        issue.code === 'unrecognized_keys'
          ? `${[...issue.path, ...issue.keys].join('.')}: unknown key`
          : `${issue.path.join('.') || '(root)'}: ${issue.message}`,
      ),
    };
  }
  const change: LimitsChange = result.data;
  const low = change.low_credit;
  const base = limits.low_credit ?? { below_usd: 0, create: limits.create };
  return {
    problems: [],
    limits: {
      ...limits,
      create: { ...limits.create, ...change.create },
      other: { ...limits.other, ...change.other },
      low_credit:
        low === null
          ? null
          : low === undefined
            ? limits.low_credit
            : { below_usd: low.below_usd ?? base.below_usd, create: { ...base.create, ...low.create } },
    },
  };
}

export async function handleAdmin(
  ctx: ReplicateContext,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  name: string,
): Promise<void> {
  if (name === 'stats') return sendJson(res, 200, collectStats(ctx));
  if (name === 'predictions') {
    const now = ctx.clock.now();
    return sendNdjson(
      res,
      (function* () {
        for (const job of ctx.store.values()) yield groundTruth(ctx, job, now);
      })(),
    );
  }
  if (method === 'PUT') {
    const body = await readJsonBody(req);
    const { limits, problems } = changedLimits(
      ctx.limiter.limits,
      body.kind === 'json' ? body.value : undefined,
    );
    if (!limits) throw badRequest(problems.join('; '));
    ctx.limiter.setLimits(limits, ctx.clock.now());
  }
  sendJson(res, 200, ctx.limiter.limits);
}
