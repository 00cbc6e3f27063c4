// prepareRun: reads the plan the starter froze in the run's store and answers the settings the
// run workflow keeps in its state; planShard: a shard's expected credits, read from the plan.
// Workers never read the manifest: the plan is all they need, wherever they run.
import { ApplicationFailure } from '@temporalio/activity';
import { FailureType } from '../common/failure-types.js';
import { providerNamed } from '../providers/registry.js';
import { UNRATED_START_PER_SECOND } from '../governor/rate-law.js';
import type {
  PlanRef,
  PlanShardInput,
  PlanShardOutput,
  PreparedRun,
  PrepareRunInput,
} from '../common/types.js';
import { batchPollWaits, DEFAULTS } from '../manifest/normalize.js';

/** `api.max_enqueued_images` by default: ten batches of 500 one-image items. */
export const DEFAULT_MAX_ENQUEUED_IMAGES = 5_000;
import { s3UrlOf } from '../storage/s3-location.js';
import type { ResolvedDeps } from './deps.js';
import { estimatedCredits, shardCredits, type PlanMeta, type RunStateStore } from '../runstate/index.js';

/**
 * Reads the run's plan, and checks an S3 output's bucket and credentials from this worker, so that
 * a run fails at once rather than at its first image.
 */
export function prepareRunActivity(deps: Pick<ResolvedDeps, 'resultStore' | 'runState'>) {
  const { resultStore, runState } = deps;
  return async function prepareRun(input: PrepareRunInput): Promise<PreparedRun> {
    const prepared = await preparedRun(runState, input);
    if (prepared.meta.objectStore)
      await resultStore(prepared.meta.outputDir, prepared.meta.objectStore).check?.();
    return prepared.run;
  };
}

async function preparedRun(
  runState: RunStateStore,
  input: PrepareRunInput,
): Promise<{ run: PreparedRun; meta: PlanMeta }> {
  const meta = await runState.readPlanMeta(input.plan);
  if (meta.hash !== input.plan.planHash) {
    throw ApplicationFailure.create({
      type: FailureType.ManifestChanged,
      message:
        "the run's plan belongs to another version of the manifest; run it with --new-run to start over",
      nonRetryable: true,
    });
  }
  const prepared: PreparedRun = {
    plan: input.plan,
    name: meta.name,
    itemCount: meta.itemCount,
    imageCount: meta.imageCount,
    // An S3 run's local folder is the starter's: history names the bucket instead.
    outputDir: meta.objectStore ? s3UrlOf(meta.objectStore) : meta.outputDir,
    requestsPerSecond: meta.requestsPerSecond,
    maxInFlight: meta.maxInFlight,
    creditsPerImage: meta.creditsPerImage,
    retry: meta.retry,
    // Plans written before task timeouts existed have none: the default then.
    taskTimeoutMs: meta.taskTimeoutMs ?? DEFAULTS.taskTimeoutMs,
    shardCredits: meta.shardCredits ?? (await shardCreditsOf(runState, input)),
  };
  if (meta.budgetCredits !== undefined) prepared.budgetCredits = meta.budgetCredits;
  if (meta.rateCaps !== undefined) prepared.rateCaps = meta.rateCaps;
  if (meta.deadline !== undefined) prepared.deadline = meta.deadline;
  if (meta.generateCount !== undefined) prepared.generateCount = meta.generateCount;
  const { lookup, limits } = providerNamed(meta.provider).capabilities;
  if (lookup.kind !== 'batch') prepared.lookup = lookup.kind;
  if (providerNamed(meta.provider).capabilities.statusStream) prepared.statusStream = true;
  if (!limits.rate) prepared.startPerSecond = UNRATED_START_PER_SECOND;
  if (providerNamed(meta.provider).capabilities.cancel) prepared.cancel = true;
  batchSettings(prepared, meta);
  if (limits.concurrency)
    prepared.concurrency = {
      ...(limits.documentedConcurrency !== undefined ? { documented: limits.documentedConcurrency } : {}),
      ...(limits.overConcurrency === 'refused' ? { refused: true } : {}),
    };
  return { run: prepared, meta };
}

/**
 * A provider that takes batch files or held calls (OpenAI), by the plan's mode: the shard workflow
 * it needs, and in batch mode `max_in_flight` as the account's enqueued images allow (a batch holds
 * its items until it ends, so the run starts another only while they fit).
 */
function batchSettings(prepared: PreparedRun, meta: PlanMeta): void {
  const submission = providerNamed(meta.provider).capabilities.submission?.[meta.apiMode ?? 'batch'];
  if (submission === undefined || submission === 'tasks') return;
  prepared.submission = submission;
  if (submission !== 'batch-file') return;
  const enqueued = meta.maxEnqueuedImages ?? DEFAULT_MAX_ENQUEUED_IMAGES;
  prepared.batch = {
    ...batchPollWaits(meta.batchPollMs),
    retryIn: meta.retryIn ?? 'batch',
    enqueuedImages: enqueued,
  };
  const imagesPerItem = Math.max(1, meta.imageCount / Math.max(1, meta.itemCount));
  prepared.maxInFlight = Math.max(1, Math.floor(enqueued / imagesPerItem));
}

/** Plans written before their meta held shard credits: summed from the items. */
async function shardCreditsOf(runState: RunStateStore, input: PrepareRunInput): Promise<number[]> {
  const { meta, items } = await runState.readPlan(input.plan);
  return shardCredits(items, meta);
}

/** planShard: the expected credits of each item of a shard, for its budget checks. */
export function planShardActivity(runState: RunStateStore) {
  return async function planShard(input: PlanShardInput): Promise<PlanShardOutput> {
    const { meta, items } = input.indices
      ? await itemsAt(runState, input.plan, input.indices)
      : await runState.readPlanItems(input.plan, input);
    const pricing = input.mode ? { ...meta, apiMode: input.mode } : meta;
    return { credits: items.map((item) => estimatedCredits(item, pricing)) };
  };
}

async function itemsAt(runState: RunStateStore, plan: PlanRef, indices: readonly number[]) {
  const meta = await runState.readPlanMeta(plan);
  const items = await Promise.all(
    indices.map(async (index) => (await runState.readPlanItem(plan, index)).item),
  );
  return { meta, items };
}
