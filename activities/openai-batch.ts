// The batch shard's API activities on OpenAI's Batch API (workflows/batch-shard.ts), one call or
// a short chain each, never retried here (Temporal's policy does):
// - openaiBatchSubmit (the submit queue): the round's items as a JSONL file of request lines
//   (custom_id = generation key digest, plan index, attempt: batch-lines.ts), uploaded, then a
//   batch created for it, unless the account already has the batch this run, shard and round
//   name in its metadata: a create retried after a lost answer finds the first, never makes a
//   second (OpenAI has no idempotency key);
// - openaiBatchStatus (the query queue): one GET of the batch;
// - openaiBatchCancel: asks OpenAI to stop it (what finished is still in its output file).
import { ApplicationFailure } from '@temporalio/activity';
import type {
  BatchRef,
  BatchStatusOutput,
  BatchSubmitInput,
  BatchSubmitOutput,
} from '../common/batch-types.js';
import { generationKey } from '../catalog/generation-key.js';
import { providerNamed } from '../providers/registry.js';
import { OpenAIClient } from '../providers/openai/index.js';
import { customIdOf, keyDigest, requestLine } from '../providers/openai/batch-lines.js';
import { TERMINAL_BATCH_STATES, type Batch } from '../providers/openai/wire.js';
import type { PlanMeta, RunStateStore } from '../runstate/index.js';
import type { ApiClients } from './api-clients.js';

/** Pages of the account's batches looked through for this round's (100 a page, newest first). */
const LIST_PAGES = 5;

export interface OpenAIBatchDeps {
  clients: ApiClients;
  runState: RunStateStore;
}

/** The run's OpenAI client; a run of another provider never schedules these activities. */
export function openaiClientFor(clients: ApiClients, meta: PlanMeta): OpenAIClient {
  const client = clients.forPlan(meta);
  if (!(client instanceof OpenAIClient))
    throw ApplicationFailure.create({
      type: 'ProviderMismatch',
      message: `the run's provider (${meta.provider ?? 'apimart'}) has no batch files`,
      nonRetryable: true,
    });
  return client;
}

/** What names a round's batch at the provider: the run, the shard and the round. */
export function batchMetadata(
  input: Pick<BatchSubmitInput, 'runId' | 'shard' | 'round'>,
): Record<string, string> {
  return {
    pixelmill_run: input.runId.slice(0, 512),
    pixelmill_shard: String(input.shard),
    pixelmill_round: String(input.round),
  };
}

function sameBatch(batch: Batch, metadata: Record<string, string>): boolean {
  return Object.entries(metadata).every(([key, value]) => batch.metadata?.[key] === value);
}

export function openaiBatchActivities(deps: OpenAIBatchDeps) {
  const { clients, runState } = deps;

  async function openaiBatchSubmit(input: BatchSubmitInput): Promise<BatchSubmitOutput> {
    const meta = await runState.readPlanMeta(input.plan);
    const client = openaiClientFor(clients, meta);
    const metadata = batchMetadata(input);
    const lines: string[] = [];
    let images = 0;
    const provider = providerNamed(meta.provider);
    for (const { index, attempt } of input.items) {
      const { item } = await runState.readPlanItem(input.plan, index);
      images += item.n;
      const mapped = provider.mapRequest(item);
      // validate refused these already: a plan that maps no more was made by another version.
      if ('problems' in mapped)
        throw ApplicationFailure.create({
          type: 'ManifestChanged',
          message: `item ${item.id} no longer maps to an OpenAI request: ${mapped.problems.map((p) => p.message).join('; ')}`,
          nonRetryable: true,
        });
      const customId = customIdOf({ key: keyDigest(generationKey(item)), index, attempt });
      lines.push(requestLine(customId, mapped.request));
    }
    let calls = 0;
    let after: string | undefined;
    for (let page = 0; page < LIST_PAGES; page++) {
      calls++;
      const listed = await client.listBatches(after !== undefined ? { after } : {});
      const found = listed.batches.find((batch) => sameBatch(batch, metadata));
      if (found) return { batchId: found.id, reused: true, calls, images };
      if (listed.after === undefined) break;
      after = listed.after;
    }
    const filename = `pixelmill-${meta.name}-shard${input.shard + 1}-round${input.round}.jsonl`;
    const fileId = await client.uploadBatchFile(Buffer.from(lines.join('')), filename);
    const batch = await client.createBatch(fileId, metadata);
    return { batchId: batch.id, reused: false, calls: calls + 2, images };
  }

  async function openaiBatchStatus(input: BatchRef): Promise<BatchStatusOutput> {
    const meta = await runState.readPlanMeta(input.plan);
    return statusOf(await openaiClientFor(clients, meta).getBatch(input.batchId));
  }

  async function openaiBatchCancel(input: BatchRef): Promise<BatchStatusOutput> {
    const meta = await runState.readPlanMeta(input.plan);
    const client = openaiClientFor(clients, meta);
    const batch = await client.getBatch(input.batchId);
    // A batch that has ended is not cancelled (OpenAI refuses it): its state is the answer.
    if (TERMINAL_BATCH_STATES.has(batch.status)) return statusOf(batch);
    return statusOf(await client.cancelBatch(input.batchId));
  }

  return { openaiBatchSubmit, openaiBatchStatus, openaiBatchCancel };
}

/** A batch as the workflow needs it: its state, progress, and a validation failure's reason. */
export function statusOf(batch: Batch): BatchStatusOutput {
  const counts = batch.request_counts;
  const output: BatchStatusOutput = { status: batch.status };
  if (counts) {
    output.finished = counts.completed + counts.failed;
    output.total = counts.total;
    output.completed = counts.completed;
    output.failed = counts.failed;
  }
  const first = batch.errors?.data?.[0];
  if (batch.status === 'failed')
    output.failure = {
      type: 'BadRequestError',
      code: first?.code ?? 'batch_failed',
      message: `the batch failed validation: ${first?.message ?? 'no reason given'}${first?.line ? ` (line ${first.line})` : ''}`,
    };
  return output;
}
