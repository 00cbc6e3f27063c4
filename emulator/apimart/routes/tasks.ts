// The platform API's task queries: GET /v1/tasks/{id} (spec 4.2) and POST /v1/tasks/batch (4.3).
//
// Lookup rules: a string that cannot be an emulator task id is 404 on GET and `invalid_id` in a
// batch; another account's task is 403 on GET but `not_found` in a batch (a batch must not
// reveal that someone else's id exists); an expired task is 404 `task_expired` / `expired`.
import { jsonObjectBody } from '../body.js';
import type { ApiCall, ApiReply, EmulatorContext } from '../context.js';
import { EmulatorApiError } from '../errors.js';
import { isTaskIdShape } from '../task-id.js';
import { renderTask } from '../task-view.js';
import { MAX_BATCH_IDS, type BatchItem } from '../wire.js';

export function handleGetTask(ctx: EmulatorContext, call: ApiCall): ApiReply {
  const id = call.pathParam;
  const record = isTaskIdShape(id) ? ctx.store.get(id) : undefined;
  if (!record) throw new EmulatorApiError('task_not_found');
  if (record.account !== call.key.account) throw new EmulatorApiError('task_forbidden');
  const now = ctx.clock.now();
  if (record.phaseAt(now) === 'expired') throw new EmulatorApiError('task_expired');
  // A `language` in the query wins (an unsupported one meaning en); without one, the task's
  // error text stays in the language it was submitted with.
  const language = call.languageGiven ? call.language : (record.language ?? 'en');
  return { status: 200, body: { code: 200, data: renderTask(record, now, language, ctx.resultBaseUrl) } };
}

export function handleBatch(ctx: EmulatorContext, call: ApiCall): ApiReply {
  const ids = jsonObjectBody(call.body).task_ids;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string'))
    throw new EmulatorApiError('invalid_task_ids');
  if (ids.length === 0) throw new EmulatorApiError('empty_task_ids');
  if (ids.length > MAX_BATCH_IDS) throw new EmulatorApiError('too_many_task_ids', { max: MAX_BATCH_IDS });

  const now = ctx.clock.now();
  const account = call.key.account;
  const data: BatchItem[] = (ids as string[]).map((id) => {
    if (!isTaskIdShape(id)) return { id, status: 'invalid_id' };
    const record = ctx.store.get(id);
    if (!record || record.account !== account) return { id, status: 'not_found' };
    return { id, status: record.phaseAt(now) };
  });
  return { status: 200, body: { code: 200, data } };
}
