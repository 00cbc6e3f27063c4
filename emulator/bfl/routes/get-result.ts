// GET /v1/get_result?id=...: the task's ResultResponse. An id the emulator never gave out, or a
// task past task_retention_seconds, answers status "Task not found" (200, or 404 with the
// task_not_found_status knob). A missing id is FastAPI's 422 for a required query parameter.
//
// With polling_host (and polling_host_only), a poll that arrives under another host name, as a
// client that built its own URL would send it, finds nothing: BFL's global endpoint routes to
// clusters, and only the returned polling_url is sure to reach the one that has the task.
import type { IncomingHttpHeaders } from 'node:http';
import type { BflContext } from '../context.js';
import { validationError } from '../errors.js';
import { viewOf } from '../results.js';
import { notFoundView, type ResultView } from '../views.js';

/** The host name of a Host header, without its port, lower case (IPv6 keeps its brackets). */
function hostName(header: string | undefined): string {
  if (header === undefined) return '';
  const host = header.startsWith('[') ? header.slice(0, header.indexOf(']') + 1) : header.split(':')[0]!;
  return host.toLowerCase();
}

export function handleGetResult(
  ctx: BflContext,
  query: URLSearchParams,
  headers: IncomingHttpHeaders,
): { status: number; body: ResultView } {
  const id = query.get('id');
  if (id === null)
    throw validationError([{ type: 'missing', loc: ['query', 'id'], msg: 'Field required', input: null }]);
  const now = ctx.clock.now();
  const { polling_host: pollingHost, polling_host_only: only } = ctx.config;
  const elsewhere = pollingHost !== null && only && hostName(headers.host) !== pollingHost.toLowerCase();
  if (elsewhere) ctx.samples.pollsElsewhere++;
  const job = elsewhere ? undefined : ctx.jobs.get(id);
  const view = job ? viewOf(ctx, job, now) : notFoundView(id);
  const status = view.status === 'Task not found' ? ctx.config.task_not_found_status : 200;
  return { status, body: view };
}
