// `retry-failed`'s bookkeeping. A retry is an ordinary run of a derived manifest: the same settings
// and output directory, only the failed items, ids kept (so image paths are the same), written to
// `<output>/.pixelmill/retry-N.yaml` and run as workflow `<run id>/retry-N`. Workflows stay as
// they are; the retry has its own plan and outcome files.
//
// Its outcomes are then folded into the original run's outcome files (appended: for an item, the
// last line wins), so the original's report, built by the same writeReport as always, shows each
// item's latest result. `retry-N.json` records the retry and whether it has been folded.
//
// Which failures a retry takes at all is decided here too: one the API would give again for the
// same request (a blocked prompt, a refused parameter) is left out unless `--all` asks for it.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { writeFileAtomic, type LoadedPlan, type OutcomeLine, type PlanMeta } from '../runstate/index.js';
import { SHARD_SIZE } from '../common/names.js';
import { FailureType } from '../common/failure-types.js';
import { readJsonFile } from '../common/state-file.js';
import type { ApiCallCounts, PlanRef } from '../common/types.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { s3UrlOf } from '../storage/s3-location.js';
import { runState } from './run-files.js';

const RETRY_ID = /^(.*)\/retry-(\d+)$/;
const RETRY_RECORD = /^retry-(\d+)\.json$/;

export interface RetryRecord {
  number: number;
  /** The retry's workflow id, `<of>/retry-N`. */
  runId: string;
  /** The original run's workflow id and the execution the retry belongs to. */
  of: string;
  ofExecution: string;
  manifestFile: string;
  manifestHash: string;
  items: number;
  folded: boolean;
  /** The retry's API calls, recorded when it is folded (for the summary's totals). */
  apiCalls?: ApiCallCounts;
}

export function retryRunId(of: string, number: number): string {
  return `${of}/retry-${number}`;
}

/** The original run of a retry's id; any other id is its own. */
export function originalRunId(runId: string): string {
  return RETRY_ID.exec(runId)?.[1] ?? runId;
}

export function retryFiles(stateDir: string, number: number): { manifest: string; record: string } {
  return { manifest: join(stateDir, `retry-${number}.yaml`), record: join(stateDir, `retry-${number}.json`) };
}

function recordNumbers(stateDir: string): number[] {
  if (!existsSync(stateDir)) return [];
  return readdirSync(stateDir)
    .map((name) => RETRY_RECORD.exec(name)?.[1])
    .filter((number): number is string => number !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

export function nextRetryNumber(stateDir: string): number {
  return (recordNumbers(stateDir).at(-1) ?? 0) + 1;
}

/** The retries of one execution of a run, oldest first. */
export function listRetries(stateDir: string, of: string, ofExecution: string): RetryRecord[] {
  return recordNumbers(stateDir)
    .flatMap((number) => readJsonFile<RetryRecord>(retryFiles(stateDir, number).record) ?? [])
    .filter((record) => record.of === of && record.ofExecution === ofExecution);
}

export async function saveRetryRecord(stateDir: string, record: RetryRecord): Promise<void> {
  await writeFileAtomic(retryFiles(stateDir, record.number).record, [`${JSON.stringify(record, null, 2)}\n`]);
}

/** The variable by which a retry manifest's variants select the outputs of theirs that failed. */
const RETRY_VARIANT = 'retry_variant';

/** The variant whose output `item` is, when it is one (it then has its product too). */
function variantOf(item: PlannedItem): string | undefined {
  return item.product !== undefined ? item.variant : undefined;
}

/**
 * A manifest item that plans back to exactly `item` (every parameter spelled out). An output of a
 * variant is its product, selected by that variant only: its id, path and report fields stay.
 */
function manifestItem(item: PlannedItem): Record<string, unknown> {
  const { id, prompt, model, size, resolution, n, image_urls, language } = item;
  const variant = variantOf(item);
  return {
    id: variant !== undefined ? item.product : id,
    ...(variant !== undefined ? { variables: { [RETRY_VARIANT]: variant } } : {}),
    prompt,
    model,
    size,
    resolution,
    n,
    ...(image_urls ? { image_urls } : {}),
    ...(language ? { language } : {}),
  };
}

/**
 * The original's output, absolute. An S3 output names its local directory too: by default it
 * would be derived from the retry manifest's own location, and the retry must keep its state
 * beside the original's (that is where its outcomes are folded from).
 */
function retryOutput(meta: PlanMeta): Record<string, unknown> {
  const { objectStore: store } = meta;
  if (!store) return { dir: meta.outputDir, path_template: meta.pathTemplate };
  return {
    dir: s3UrlOf(store),
    ...(store.endpoint !== undefined ? { endpoint: store.endpoint } : {}),
    ...(store.region !== undefined ? { region: store.region } : {}),
    ...(store.forcePathStyle !== undefined ? { force_path_style: store.forcePathStyle } : {}),
    local_dir: meta.outputDir,
    path_template: meta.pathTemplate,
  };
}

/** The variants of the failed outputs, each taking only its own (by `retry_variant`). */
function retryVariants(items: readonly PlannedItem[]): { variants?: Record<string, unknown>[] } {
  const ids = [...new Set(items.flatMap((item) => variantOf(item) ?? []))];
  if (ids.length === 0) return {};
  return { variants: ids.map((id) => ({ id, where: { [RETRY_VARIANT]: id } })) };
}

/**
 * The derived manifest: the original's settings, with an absolute output, and only `items`.
 * Without `webhooks`: a retry is a handful of items, which `retry-failed` tracks by polling, with
 * no receiver to set up for it.
 */
export function retryManifestText(
  meta: PlanMeta,
  items: readonly PlannedItem[],
  options: { of: string; number: number; budgetCredits?: number },
): string {
  const manifest = {
    name: meta.name,
    description: `retry ${options.number} of the failed items of ${options.of} (written by pixelmill retry-failed)`,
    api: { ...(meta.apiBaseUrl ? { base_url: meta.apiBaseUrl } : {}), api_key_env: meta.apiKeyEnv },
    limits: {
      requests_per_second: meta.requestsPerSecond,
      max_in_flight: meta.maxInFlight,
      ...(options.budgetCredits !== undefined ? { budget_credits: options.budgetCredits } : {}),
      // The original's deadline is not the retry's: a retry runs until it is done.
      ...(meta.taskTimeoutMs !== undefined ? { task_timeout: `${meta.taskTimeoutMs}ms` } : {}),
    },
    output: retryOutput(meta),
    retry: { max_attempts: meta.retry.maxAttempts, on: meta.retry.on },
    ...retryVariants(items),
    items: items.map(manifestItem),
  };
  return toYaml(manifest, { lineWidth: 0 });
}

/**
 * Appends the retry's outcomes to the original's outcome files, under the original's indices.
 * An item's folded line adds its earlier attempts and credits, so the report still counts every
 * submission. Items the retry never submitted keep their earlier outcome (failed: retryable again).
 * `latest` (the original's newest outcome per index) is updated in place.
 */
export async function foldRetryOutcomes(
  original: { plan: PlanRef; loaded: LoadedPlan; latest: (OutcomeLine | undefined)[] },
  retryPlan: PlanRef,
): Promise<number> {
  const indexById = new Map(original.loaded.items.map((item, index) => [item.id, index]));
  const retried = new Map<string, OutcomeLine>();
  for (const line of await runState.readOutcomes(retryPlan)) retried.set(line.id, line);
  const byShard = new Map<number, OutcomeLine[]>();
  for (const line of retried.values()) {
    const index = indexById.get(line.id);
    // Never submitted by the retry (cancelled, or over its budget): the earlier outcome stands.
    if (index === undefined || (line.attempts === 0 && line.task_id === null)) continue;
    const earlier = original.latest[index];
    // Already folded (an earlier fold stopped before its record was saved).
    if (earlier && line.task_id !== null && earlier.task_id === line.task_id) continue;
    const folded: OutcomeLine = {
      ...line,
      index,
      attempts: (earlier?.attempts ?? 0) + line.attempts,
      credits_cost: (earlier?.credits_cost ?? 0) + line.credits_cost,
    };
    original.latest[index] = folded;
    const shard = Math.floor(index / SHARD_SIZE);
    const lines = byShard.get(shard) ?? [];
    lines.push(folded);
    byShard.set(shard, lines);
  }
  let count = 0;
  for (const [shard, lines] of byShard) {
    await runState.appendOutcomes(original.plan, shard, lines);
    count += lines.length;
  }
  return count;
}

/** The prompt breaks the content policy (a task error). */
const CONTENT_POLICY = { types: new Set(['content_policy_violation']), codes: new Set(['content_blocked']) };
/** A parameter refused: a 400 at submit, a request the client would not send, or such a task error. */
const INVALID_REQUEST = {
  types: new Set<string>([
    FailureType.BadRequestError,
    FailureType.InvalidRequestError,
    'invalid_request_error',
  ]),
  codes: new Set(['api_bad_request', 'api_invalid_request']),
};

/**
 * Why a failed item cannot succeed if it is submitted again as it is (`content_blocked`, or the
 * API's code for the refused parameter, e.g. `invalid_size`); undefined when it may. A submit
 * refused again and again (SubmitRefused: a 5xx for this item while others went through), a
 * failed generation, a task timeout: those may well work another time.
 */
export function cannotSucceedAgain(outcome: OutcomeLine): string | undefined {
  const { error } = outcome;
  if (outcome.status !== 'failed' || !error) return undefined;
  const is = (kind: typeof CONTENT_POLICY): boolean =>
    kind.types.has(error.type) || kind.codes.has(error.code);
  if (is(CONTENT_POLICY)) return error.code;
  if (!is(INVALID_REQUEST)) return undefined;
  // The client's message names the API's own code: `POST /v1/images/generations failed with 400 invalid_size: ...`.
  return /failed with 4\d\d ([a-z][\w.-]*)/.exec(error.message)?.[1] ?? error.code;
}

/** `content_blocked 2, invalid_size 1`: most first. */
export function describeReasons(reasons: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const reason of reasons) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  return [...counts]
    .sort(([a, m], [b, n]) => n - m || a.localeCompare(b))
    .map(([reason, count]) => `${reason} ${count}`)
    .join(', ');
}
