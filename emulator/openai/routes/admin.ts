// The emulator's own endpoints under /_emulator/ (no key; not part of OpenAI's API): counters, the
// ground truth of every request line it accepted in a batch, as NDJSON (so a test can find a
// custom_id sent twice, or an item the client never collected), and the knobs in force, which a PUT
// changes on the running emulator (journaled, so a restart keeps them).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readJsonBody, sendJson, sendNdjson } from '../../core/index.js';
import { BATCH_STATUSES, endOf, ran, statusAt, type BatchStatus } from '../batches.js';
import { applyKnobsChange } from '../config.js';
import type { OpenAIContext } from '../context.js';
import { invalidRequest } from '../errors.js';

export const ADMIN_ROUTES: ReadonlyMap<string, string> = new Map([
  ['stats', 'GET'],
  ['requests', 'GET'],
  ['config', 'GET, PUT'],
]);

export interface OpenAIEmulatorStats {
  /** `{ "<METHOD> <route pattern>": { "<HTTP status>": count } }` */
  requests: Record<string, Record<string, number>>;
  /** Batches by their status now. */
  batches: Record<BatchStatus, number>;
  batches_total: number;
  /** Request lines accepted in batches that passed validation. */
  batch_requests: number;
  /** custom_ids that appear in more than one line across those batches. */
  custom_ids_sent_twice: number;
  files: {
    /** Output and error file lines served whole. */
    lines_served: number;
    /** Bytes of file content sent (uploads and batch files). */
    bytes_served: number;
    /** Content requests with a Range header. */
    ranges_served: number;
  };
  /** Faults injected, by name. */
  faults: Record<string, number>;
}

export interface GroundTruthLine {
  batch_id: string;
  batch_index: number;
  custom_id: string;
  line: number;
  /** How it ends if it runs: `succeeded`, or the failed status code. */
  outcome: 'succeeded' | number;
  finish_at_ms: number;
  /** Whether it ran before its batch stopped (false while the batch is still running). */
  ran: boolean;
  batch_status: BatchStatus;
}

export function collectStats(ctx: OpenAIContext): OpenAIEmulatorStats {
  const now = ctx.clock.now();
  const batches = Object.fromEntries(BATCH_STATUSES.map((s) => [s, 0])) as Record<BatchStatus, number>;
  const seen = new Map<string, number>();
  let accepted = 0;
  for (const batch of ctx.batches.values()) {
    batches[statusAt(batch, now)]++;
    for (const request of batch.requests) {
      accepted++;
      seen.set(request.customId, (seen.get(request.customId) ?? 0) + 1);
    }
  }
  return {
    requests: ctx.stats.requests(),
    batches,
    batches_total: ctx.batches.size,
    batch_requests: accepted,
    custom_ids_sent_twice: [...seen.values()].filter((n) => n > 1).length,
    files: {
      lines_served: ctx.served.lines,
      bytes_served: ctx.served.bytes,
      ranges_served: ctx.served.ranges,
    },
    faults: ctx.stats.faults(),
  };
}

function* groundTruth(ctx: OpenAIContext, now: number): Generator<GroundTruthLine> {
  for (const batch of ctx.batches.values()) {
    const end = endOf(batch);
    const status = statusAt(batch, now);
    for (const request of batch.requests)
      yield {
        batch_id: batch.id,
        batch_index: batch.index,
        custom_id: request.customId,
        line: request.line,
        outcome: request.ok ? 'succeeded' : request.error!.status,
        finish_at_ms: request.finishAt,
        ran: now >= end.at && ran(request, end),
        batch_status: status,
      };
  }
}

export async function handleAdmin(
  ctx: OpenAIContext,
  req: IncomingMessage,
  res: ServerResponse,
  method: string,
  name: string,
): Promise<void> {
  if (name === 'stats') return sendJson(res, 200, collectStats(ctx));
  if (name === 'requests') return sendNdjson(res, groundTruth(ctx, ctx.clock.now()));
  if (method === 'PUT') {
    const body = await readJsonBody(req);
    const { problems } = changeKnobs(ctx, body.kind === 'json' ? body.value : undefined);
    if (problems.length > 0) throw invalidRequest(problems.join('; '), null, 'invalid_config');
  }
  const { limits, batches, images, faults } = ctx.config;
  sendJson(res, 200, { limits, batches, images, faults });
}

/** Puts a change of the knobs in force, journaled; an invalid one changes nothing. */
export function changeKnobs(ctx: OpenAIContext, change: unknown): { problems: string[] } {
  const { config, problems } = applyKnobsChange(ctx.config, change);
  if (!config) return { problems };
  ctx.config = config;
  // Padding or image content may have changed: batch files are counted again when next read.
  ctx.contents.clear();
  ctx.journal?.append({ kind: 'custom', at: ctx.clock.now(), name: 'knobs', payload: change });
  return { problems: [] };
}
