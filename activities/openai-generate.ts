// openaiGenerate (the submit queue, sync mode): one item as one held call to OpenAI's Images API,
// which answers within tens of seconds with the images as base64; they are stored and checked
// (openai-images.ts) and the item's outcome line appended before the activity ends. Liveness
// heartbeats run while the call is held. A refusal of the item itself (moderation, a 400) is its
// failure, answered; what may heal (429 with its Retry-After, 5xx, a timeout) throws, and
// Temporal's retry policy tries again. Each call takes its turn at the run's rate (rate-gate.ts)
// and tells the gate how it was answered, so that a governed run learns OpenAI's images-per-minute
// limit from its 429s and Retry-After, as it does the other providers' from their submits.
import type { GenerateItemInput, GenerateItemOutput } from '../common/batch-types.js';
import { isImageApiError } from '../api/index.js';
import { failureOf } from '../providers/openai/batch-lines.js';
import { costOfUsage } from '../providers/openai/pricing.js';
import { providerNamed } from '../providers/registry.js';
import { activityContext, appendSequence } from './context.js';
import type { ApiClients } from './api-clients.js';
import type { ResolvedDeps } from './deps.js';
import type { RateGate } from './rate-gate.js';
import { openaiClientFor } from './openai-batch.js';
import { storeItemImages } from './openai-images.js';

export function openaiGenerateActivity(deps: {
  clients: ApiClients;
  resolved: ResolvedDeps;
  /** Waits for this worker's next submit slot at the run's rate (rate-gate.ts). */
  gate: Pick<RateGate, 'acquire'>;
}) {
  const { runState } = deps.resolved;
  return async function openaiGenerate(input: GenerateItemInput): Promise<GenerateItemOutput> {
    const context = activityContext();
    const calls = context?.info.attempt ?? 1;
    const { meta, item } = await runState.readPlanItem(input.plan, input.index);
    const client = openaiClientFor(deps.clients, meta);
    const mapped = providerNamed(meta.provider).mapRequest(item);
    if ('problems' in mapped) throw new Error(`item ${item.id} no longer maps to an OpenAI request`);
    const taskId = `sync/${item.id}/${input.attempt}`;
    let answer;
    const answered = await deps.gate.acquire('submit', meta);
    try {
      answer = await client.generate(
        mapped.request.body,
        context ? { signal: context.cancellationSignal } : {},
      );
      answered();
    } catch (error) {
      answered(error);
      if (isImageApiError(error) && !error.retryable && error.httpStatus !== undefined) {
        const failure = failureOf(error.httpStatus, error.apiCode, error.message);
        return { s: 'failed', cost: 0, taskId, error: failure, calls };
      }
      throw error;
    }
    const images = (answer.data ?? []).map((image) => image.b64_json ?? '');
    const cost = costOfUsage(item.model, answer.usage ?? undefined, 'sync');
    if (images.length === 0 || images.some((image) => image === ''))
      return {
        s: 'failed',
        cost,
        taskId,
        error: {
          type: 'generation_error',
          code: 'no_image_output',
          message: 'the answer holds no base64 image',
        },
        calls,
      };
    const stored = await storeItemImages(
      {
        meta,
        store: deps.resolved.resultStore(meta.outputDir, meta.objectStore),
        retrying: calls > 1,
      },
      {
        index: input.index,
        item,
        attempt: input.attempt,
        taskId,
        images,
        ...(answer.output_format ? { format: answer.output_format } : {}),
        cost,
      },
    );
    await runState.appendOutcomes(input.plan, input.shard, [stored.line], appendSequence(context));
    return { ...stored.outcome, calls };
  };
}
