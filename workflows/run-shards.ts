// How a run starts its shards: how many submit at once, and what each is told (its items, its
// limits, its place in the UI). Pure, so run.ts keeps only the order of things.
import { SHARD_SIZE } from '../common/names.js';
import { QUEUED_START } from './concurrency-cap.js';
import { countAttributes, ITEMS_ATTRIBUTE, MANIFEST_ATTRIBUTE } from '../common/search-attributes.js';
import type { HandedSlots, PreparedRun, RunInput, ShardInput, ShardSpec } from '../common/types.js';

/** Defaults of the batch-lookup pacing when the plan does not say. */
const POLL_MIN_MS = 1_000;
const POLL_MAX_MS = 10_000;
/** About how often running shards tell the run their progress, over the whole run (shardProgressSignal). */
const RUN_DETAIL_UPDATES = 20;
/**
 * The submit rate a run plans its queue depth for when its rate is discovered and uncapped: above
 * what most providers admit (the depth is bounded anyway, see submitQueueDepth).
 */
export const UNCAPPED_SUBMIT_RATE = 100;

/**
 * Shards submitting at once: enough to keep `max_in_flight` items at the API, plus one. A shard
 * whose share is its whole size submits everything at once and hands off holding all of it
 * (in-flight-shares.ts), so the next shard would find no slot free until a tail closed; with one
 * shard more, each share is smaller than a shard and a shard submits its last items as its first
 * ones finish, handing off with slots to spare.
 *
 * One at a time where the provider refuses tasks over its concurrency (BFL): the account's slots
 * are far fewer than a shard's items, and shards learning a cap each from refusals the others
 * cause took turns at them, the provider running 18 to 19 of its 24 on average. A shard hands the
 * next its cap and its tasks still running (HandedSlots).
 */
export function concurrentShards(
  shardCount: number,
  plan: Pick<PreparedRun, 'maxInFlight' | 'concurrency'>,
): number {
  if (plan.concurrency?.refused) return 1;
  return Math.max(1, Math.min(shardCount, Math.ceil(plan.maxInFlight / SHARD_SIZE) + 1));
}

/**
 * Submits each shard keeps scheduled on the rate-limited queue: about 1.5 s of the run's rate
 * between all of them, enough that the queue never runs dry between a call's answer and the next
 * schedule. More only waits in the queue, and a waiting submit holds a `max_in_flight` slot: at
 * 100 per shard, submits queued 12 s at 50 calls/s and the slots ran out before the rate did.
 */
export function submitQueueDepth(requestsPerSecond: number, parallelShards: number): number {
  return Math.max(4, Math.min(100, Math.ceil((1.5 * requestsPerSecond) / parallelShards)));
}

function submitRateOf(plan: PreparedRun): number {
  if (plan.rateCaps === undefined) return plan.requestsPerSecond;
  return Math.min(plan.rateCaps.submit ?? Infinity, plan.rateCaps.all ?? Infinity, UNCAPPED_SUBMIT_RATE);
}

/** The items a run generates: [0, generateCount) of an incremental run's plan, else all. */
export function generatedItems(plan: Pick<PreparedRun, 'itemCount' | 'generateCount'>): number {
  return plan.generateCount ?? plan.itemCount;
}

/** The shards of the items a run generates, SHARD_SIZE each. */
export function generationShards(plan: Pick<PreparedRun, 'itemCount' | 'generateCount'>): ShardSpec[] {
  const items = generatedItems(plan);
  return Array.from({ length: Math.ceil(items / SHARD_SIZE) }, (_, index) => ({
    index,
    offset: index * SHARD_SIZE,
    count: Math.min(SHARD_SIZE, items - index * SHARD_SIZE),
  }));
}

/**
 * An incremental run's carried items in ranges of SHARD_SIZE, each checked by one carryOver
 * activity whose outcome lines are numbered after the generation shards'.
 */
export function carryOverRanges(plan: Pick<PreparedRun, 'itemCount' | 'generateCount'>) {
  const first = generatedItems(plan);
  const firstShard = Math.ceil(first / SHARD_SIZE);
  return Array.from({ length: Math.ceil((plan.itemCount - first) / SHARD_SIZE) }, (_, k) => ({
    offset: first + k * SHARD_SIZE,
    count: Math.min(SHARD_SIZE, plan.itemCount - first - k * SHARD_SIZE),
    shard: firstShard + k,
  }));
}

/** Shards for carried items that must be generated after all, numbered from `firstIndex`. */
export function regenerationShards(indices: readonly number[], firstIndex: number): ShardSpec[] {
  const sorted = [...indices].sort((a, b) => a - b);
  const shards: ShardSpec[] = [];
  for (let start = 0; start < sorted.length; start += SHARD_SIZE) {
    const chunk = sorted.slice(start, start + SHARD_SIZE);
    shards.push({
      index: firstIndex + shards.length,
      offset: chunk[0]!,
      count: chunk.length,
      indices: chunk,
    });
  }
  return shards;
}

/** What the run knows when it starts a shard. */
export interface ShardStart {
  input: RunInput;
  plan: PreparedRun;
  runId: string;
  /** The fairness key of the run's governed calls: its first execution, the same in every one. */
  fairnessKey: string;
  shard: ShardSpec;
  /** Shards submitting at once (concurrentShards). */
  parallel: number;
  maxInFlight: number;
  allowance: number | undefined;
  deadlineAt: number | undefined;
  learnedPollMs: number | undefined;
  learnedGenerationMs?: number[];
  learnedSlots?: HandedSlots | undefined;
  paused: boolean;
  cancelled: boolean;
}

/** The shard's workflow input. */
export function shardInput(start: ShardStart): ShardInput {
  const { input, plan, shard } = start;
  return {
    plan: plan.plan,
    runId: start.runId,
    ...(input.apiAccount !== undefined ? { apiAccount: input.apiAccount } : {}),
    ...(plan.rateCaps !== undefined ? { governed: { fairnessKey: start.fairnessKey } } : {}),
    shard,
    limits: {
      maxInFlight: start.maxInFlight,
      handOff: true,
      progressStep: Math.max(1, Math.ceil(plan.itemCount / RUN_DETAIL_UPDATES)),
      maxPendingSubmits: submitQueueDepth(submitRateOf(plan), start.parallel),
      ...(start.allowance !== undefined ? { allowance: start.allowance } : {}),
      retry: plan.retry,
      ...(plan.taskTimeoutMs !== undefined ? { taskTimeoutMs: plan.taskTimeoutMs } : {}),
      ...(start.deadlineAt !== undefined ? { deadlineAt: start.deadlineAt } : {}),
      pollMinMs: plan.pollMinMs ?? POLL_MIN_MS,
      pollMaxMs: plan.pollMaxMs ?? POLL_MAX_MS,
      ...(start.learnedPollMs !== undefined ? { firstPollMs: start.learnedPollMs } : {}),
      ...(start.learnedGenerationMs !== undefined ? { generationMs: start.learnedGenerationMs } : {}),
      ...(input.webhookBaseUrl
        ? { webhookBaseUrl: input.webhookBaseUrl }
        : plan.statusStream
          ? { statusStreams: true }
          : {}),
      ...(input.tuning?.shardHistoryLimit ? { historyLimit: input.tuning.shardHistoryLimit } : {}),
      ...(input.tuning?.runCheckMs ? { runCheckMs: input.tuning.runCheckMs } : {}),
      ...(plan.lookup !== undefined && plan.lookup !== 'batch' ? { lookup: plan.lookup } : {}),
      ...(plan.cancel ? { cancel: true } : {}),
      ...(plan.submission
        ? { submission: plan.submission, ...(plan.batch ? { batch: plan.batch } : {}) }
        : {}),
      ...(plan.concurrency
        ? {
            concurrency: {
              start: concurrencyStart(plan.concurrency, start.parallel),
              ...(plan.concurrency.refused ? { refused: true } : { sharing: start.parallel }),
              ...(plan.concurrency.refused && start.learnedSlots ? { handed: start.learnedSlots } : {}),
            },
          }
        : {}),
    },
    paused: start.paused,
    cancelled: start.cancelled,
  };
}

/** The shard as the Temporal UI shows it: summary, memo, and search attributes when the run has them. */
export function shardPresentation(
  shard: ShardInput['shard'],
  shardCount: number,
  plan: PreparedRun,
  manifestName?: string,
) {
  const { index, offset, count, indices } = shard;
  return {
    staticSummary: indices
      ? `generates ${count} carried items of ${plan.name} whose stored results could not be had any more`
      : `shard ${index + 1} of ${shardCount}: items[${offset}..${offset + count - 1}] of ${plan.name}`,
    memo: { shard: index + 1, shards: shardCount, offset, count },
    ...(manifestName !== undefined
      ? {
          typedSearchAttributes: [
            { key: MANIFEST_ATTRIBUTE, value: manifestName },
            { key: ITEMS_ATTRIBUTE, value: count },
            ...countAttributes({ completed: 0, failed: 0 }, 0),
          ],
        }
      : {}),
  };
}

/** Tasks a provider runs at once when its documentation names no number: a few, found upward. */
export const UNDOCUMENTED_CONCURRENCY = 4;

/**
 * A shard's first cap: its share, among the shards submitting at once, of the documented
 * concurrency, or for a provider that queues what it cannot start, of a first guess its queue's
 * answers correct (QUEUED_START).
 */
export function concurrencyStart(
  concurrency: { documented?: number; refused?: boolean },
  parallel: number,
): number {
  const documented = concurrency.documented ?? UNDOCUMENTED_CONCURRENCY;
  const start = concurrency.refused ? documented : Math.max(documented, QUEUED_START);
  return Math.max(1, Math.floor(start / Math.max(1, parallel)));
}
