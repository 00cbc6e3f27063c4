// GET /v1/get_result?id=...: the task's ResultResponse. An id the emulator never gave out, or a
// task past task_retention_seconds, answers status "Task not found" (200, or 404 with the
// task_not_found_status knob). A missing id is FastAPI's 422 for a required query parameter.
import type { BflContext } from '../context.js';
import { validationError } from '../errors.js';
import { viewOf } from '../results.js';
import { notFoundView, type ResultView } from '../views.js';

export function handleGetResult(
  ctx: BflContext,
  query: URLSearchParams,
): { status: number; body: ResultView } {
  const id = query.get('id');
  if (id === null)
    throw validationError([{ type: 'missing', loc: ['query', 'id'], msg: 'Field required', input: null }]);
  const now = ctx.clock.now();
  const job = ctx.jobs.get(id);
  const view = job ? viewOf(ctx, job, now) : notFoundView(id);
  const status = view.status === 'Task not found' ? ctx.config.task_not_found_status : 200;
  return { status, body: view };
}
