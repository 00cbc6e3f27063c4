// The first API behind the provider interface: submits carry an Idempotency-Key, states come from
// batch lookups of up to 500 tasks (ids and statuses only), a finished task's result from its GET.
// A single task's state is a batch of one: the GET would carry the result the lookup does not need.
// A 404 of a task is an answer (`expired` when the API says task_expired, else `not_found`), not a
// failure: the shard acts on it.
import { NotFoundError } from '../../api/errors.js';
import { HttpBackedClient } from '../http-backed-client.js';
import type {
  CallOptions,
  ProviderClient,
  ProviderRequest,
  SubmitOptions,
  SubmittedTask,
  TaskResult,
  TaskState,
} from '../types.js';
import type { ImageApiClient } from './client.js';
import { taskResultOf } from './task-result.js';
import type { GenerationRequest } from './wire.js';

/** Status reported for an id the batch answer left out: not a task state, so "not finished yet". */
export const MISSING_FROM_BATCH = 'missing';

export class ApimartClient extends HttpBackedClient<ImageApiClient> implements ProviderClient {
  readonly provider = 'apimart';

  constructor(api: ImageApiClient) {
    super(api);
  }

  async submit(request: ProviderRequest, options: SubmitOptions = {}): Promise<SubmittedTask> {
    const body = { ...request.body, model: request.model } as GenerationRequest;
    if (options.webhook !== undefined) body.webhook = options.webhook;
    const { taskIds } = await this.http.submit(body, {
      ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    // submit() rejects an acknowledgement without ids, so the first one exists.
    return { ref: taskIds[0]! };
  }

  async lookupBatch(refs: readonly string[], options: CallOptions = {}): Promise<TaskState[]> {
    const answer = await this.http.batchLookup([...refs], options);
    // The service answers in the order asked; matching by id keeps us right even if it did not.
    const byId = new Map(answer.map((entry) => [entry.id, entry.status]));
    return refs.map((ref) => ({ status: byId.get(ref) ?? MISSING_FROM_BATCH }));
  }

  async lookupOne(ref: string, options: CallOptions = {}): Promise<TaskState> {
    const [state] = await this.lookupBatch([ref], options);
    return state!;
  }

  async getTask(ref: string, options: CallOptions = {}): Promise<TaskResult> {
    try {
      return taskResultOf(await this.http.getTask(ref, options));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      return { status: error.apiCode === 'task_expired' ? 'expired' : 'not_found' };
    }
  }

  /** The API has no cancel: a task runs to its end (and is charged only if it completes). */
  async cancel(): Promise<void> {}
}
