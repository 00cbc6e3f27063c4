// storeResults (the transfer queue): re-hosts the images of finished tasks. Each image is
// streamed from the result host into storage, hashed on the way, and recorded in the shard's
// outcomes with its path, sha256, size and source URL: one append for the batch, when it ends
// (in an object store, one object rather than one per item). collectResults (collect-results.ts)
// is the same transfer with the tasks' GETs in it.
//
// Retries are Temporal's: a transient download failure (truncation, 5xx, network) fails the
// activity and the next attempt resumes. Two things keep that cheap and exact:
// - the heartbeats carry the outcome lines finished so far (the last one is sent when the attempt
//   fails), so a retry skips those items and appends their lines with its own;
// - an image whose source URL is already recorded for this shard, and whose file still has the
//   recorded size and sha256, is not downloaded again.
import { setMaxListeners } from 'node:events';
import type { Context } from '@temporalio/activity';
import { activityContext, appendSequence, whileAlive } from './context.js';
import { isImageApiError, ResultExpiredError } from '../api/index.js';
import { errorSummary } from '../common/errors.js';
import { FailureType } from '../common/failure-types.js';
import type {
  ErrorSummary,
  StoredItem,
  StoreRequest,
  StoreResultsInput,
  StoreResultsOutput,
  TaskResult,
} from '../common/types.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { StoragePathError } from '../storage/errors.js';
import { UnsafeStoragePathError, type ResultStore } from '../storage/result-store.js';
import type { ApiClients } from './api-clients.js';
import type { ProviderClient } from '../providers/types.js';
import type { ResolvedDeps } from './deps.js';
import { toActivityFailure } from './failures.js';
import type { ImageRecord, OutcomeLine, PlanMeta, RunStateStore } from '../runstate/index.js';
import { extensionFor, renderResultPath } from '../manifest/result-paths.js';
import { checkStored, type CheckedFields } from './image-checks.js';

export const RESULT_EXPIRED: ErrorSummary = {
  type: FailureType.ResultExpired,
  code: 'result_expired',
  message: 'result URL expired before it was stored',
};

export const NO_RESULT_URLS: ErrorSummary = {
  type: FailureType.NoResultUrls,
  code: 'no_result_urls',
  message: 'the task completed without result URLs',
};

/** What a transfer heartbeats: the items finished so far in this activity (all attempts). */
export interface StoreHeartbeat {
  done: StoredItem[];
  /** Their outcome lines, appended when the batch ends. */
  lines?: OutcomeLine[];
  /** collectResults: the tasks' results its GETs learned, by plan index. */
  results?: [number, TaskResult][];
  /** collectResults: the GETs it made, so that a retry counts an earlier attempt's calls. */
  calls?: number;
}

/** A batch of a shard's items to store (storeResults' and collectResults' inputs). */
type TransferInput = Pick<StoreResultsInput, 'plan' | 'shard'> & { items: readonly { index: number }[] };

interface StoreContext {
  meta: PlanMeta;
  client: ProviderClient;
  store: ResultStore;
  /** Images already stored for the batch's items, by source URL. */
  known: Map<string, ImageRecord>;
  /** A retry of this activity: an earlier attempt may have left partial writes behind. */
  retrying: boolean;
  signal: AbortSignal | undefined;
}

interface ItemOutcome {
  status: StoredItem['status'];
  images: ImageRecord[];
  error: ErrorSummary | null;
}

interface Progress {
  done: Map<number, StoredItem>;
  lines: Map<number, OutcomeLine>;
  results: Map<number, TaskResult>;
  calls: number;
}

function previousProgress(context: Context | undefined): Progress {
  const details = context?.info.heartbeatDetails as Partial<StoreHeartbeat> | undefined;
  const done = Array.isArray(details?.done) ? details.done : [];
  const lines = Array.isArray(details?.lines) ? details.lines : [];
  const results = Array.isArray(details?.results) ? details.results : [];
  return {
    done: new Map(done.map((item) => [item.index, item])),
    lines: new Map(lines.map((line) => [line.index, line])),
    results: new Map(results),
    calls: typeof details?.calls === 'number' ? details.calls : 0,
  };
}

/** Images already stored for the batch's items, by source URL: an earlier attempt's, or a batch's that failed. */
async function storedImages(
  runState: RunStateStore,
  input: TransferInput,
): Promise<Map<string, ImageRecord>> {
  const known = new Map<string, ImageRecord>();
  const indices = new Set(input.items.map((item) => item.index));
  for (const line of await runState.readOutcomes(input.plan, input.shard, indices)) {
    for (const image of line.images) known.set(image.source_url, image);
  }
  return known;
}

/** Stores every image of one item; resolves with its outcome, throws when a retry may help. */
async function storeItem(ctx: StoreContext, request: StoreRequest, item: PlannedItem): Promise<ItemOutcome> {
  const images: ImageRecord[] = [];
  if (request.urls.length === 0) return { status: 'failed', images, error: NO_RESULT_URLS };
  for (const [index, url] of request.urls.entries()) {
    const recorded = ctx.known.get(url);
    if (recorded !== undefined && (await ctx.store.has(recorded.path, recorded))) {
      images.push(recorded);
      continue;
    }
    try {
      const download = await ctx.client.download(url, ctx.signal ? { signal: ctx.signal } : {});
      const ext = extensionFor(download.contentType);
      const path = renderResultPath(ctx.meta.pathTemplate, {
        name: ctx.meta.name,
        item,
        index,
        ext,
      });
      const metadata = {
        'pixelmill-manifest': ctx.meta.name,
        'pixelmill-item-id': item.id,
        'pixelmill-image-index': String(index),
      };
      // The bytes stream to the store; the checks decode the file it wrote.
      let checked: CheckedFields = {};
      const stored = await ctx.store.put(path, download.body, metadata, async (file) => {
        checked = await checkStored(ctx, file, { path, ext, item, metadata });
      });
      if (ctx.retrying) await ctx.store.discardPartials?.(path);
      const image: ImageRecord = {
        path,
        sha256: stored.sha256,
        bytes: stored.bytes,
        source_url: url,
        ...checked,
      };
      images.push(image);
      ctx.known.set(url, image);
    } catch (error) {
      if (error instanceof ResultExpiredError) return { status: 'expired', images, error: RESULT_EXPIRED };
      // This item's own failure (a refused download, a path the file system will not take): it
      // fails alone, and the batch goes on. What is about the whole store (refused credentials, a
      // missing bucket) fails the batch; what may heal (a 5xx, a full disk) retries it.
      const itemAlone =
        error instanceof UnsafeStoragePathError ||
        error instanceof StoragePathError ||
        (isImageApiError(error) && !error.retryable);
      if (itemAlone) {
        return {
          status: 'failed',
          images,
          error: errorSummary(error),
        };
      }
      throw toActivityFailure(error);
    }
  }
  const failed = images.findIndex((image) => image.checks?.some((finding) => finding.level === 'error'));
  if (failed >= 0) return { status: 'failed', images, error: checkFailure(failed, images[failed]!) };
  return { status: 'completed', images, error: null };
}

/** The failure of an item whose image `index` failed a check set to `error`. */
function checkFailure(index: number, image: ImageRecord): ErrorSummary {
  const finding = image.checks!.find((entry) => entry.level === 'error')!;
  return {
    type: FailureType.ImageCheckFailed,
    code: `check_${finding.check}`,
    message: `image ${index} ${finding.message}`,
  };
}

/** What a transfer activity (this one, collectResults) works with: set up once per attempt. */
export interface Transfer {
  ctx: StoreContext & { runState: RunStateStore };
  progress: Progress;
  plan: StoreResultsInput['plan'];
}

/**
 * Runs `work` as a transfer activity of `input`'s shard: with what an earlier attempt finished,
 * heartbeats while it runs (and when it fails, so that the next attempt resumes), and the
 * outcome lines of what it stored appended when it ends, failed or not.
 */
export async function asTransfer<T>(
  deps: { clients: ApiClients; resolved: ResolvedDeps },
  input: TransferInput,
  work: (transfer: Transfer) => Promise<T>,
): Promise<T> {
  const { runState } = deps.resolved;
  const context = activityContext();
  // Every download of the batch listens on the one cancellation signal: not a leak.
  if (context) setMaxListeners(0, context.cancellationSignal);
  const meta = await runState.readPlanMeta(input.plan);
  const retrying = (context?.info.attempt ?? 1) > 1;
  const ctx: Transfer['ctx'] = {
    meta,
    client: deps.clients.forPlan(meta),
    store: deps.resolved.resultStore(meta.outputDir, meta.objectStore),
    known: await storedImages(runState, input),
    retrying,
    signal: context?.cancellationSignal,
    runState,
  };
  const progress = previousProgress(context);
  // Once per heartbeat interval, never per item: each beat encodes every line so far.
  const beat = (): void => {
    const details: StoreHeartbeat = {
      done: [...progress.done.values()],
      lines: [...progress.lines.values()],
    };
    if (progress.results.size > 0) details.results = [...progress.results.entries()];
    if (progress.calls > 0) details.calls = progress.calls;
    context?.heartbeat(details);
  };
  // Liveness while a download runs too, so the heartbeat timeout can be short. A stalled
  // download is the client's body timeout's business, not the heartbeat's.
  const record = (): Promise<void> =>
    runState.appendOutcomes(input.plan, input.shard, [...progress.lines.values()], appendSequence(context));
  let output: T;
  try {
    output = await whileAlive(() => work({ ctx, progress, plan: input.plan }), beat);
  } catch (error) {
    // What was stored before the failure is recorded all the same: a failure the batch does not
    // retry must not leave stored images out of the report (a retry appends them again). The
    // next attempt starts from this beat.
    beat();
    await record().catch(() => undefined);
    throw toActivityFailure(error);
  }
  await record();
  return output;
}

export function storeResultsActivity(deps: { clients: ApiClients; resolved: ResolvedDeps }) {
  return (input: StoreResultsInput): Promise<StoreResultsOutput> =>
    asTransfer(deps, input, async (transfer) => {
      const items: StoredItem[] = [];
      for (const request of input.items) items.push(await storeRequest(transfer, request));
      return { items };
    });
}

/** Stores one finished task's images, unless an earlier attempt did; its outcome line and result. */
export async function storeRequest(
  { ctx, progress, plan }: Transfer,
  request: StoreRequest,
): Promise<StoredItem> {
  const { done, lines } = progress;
  const earlier = done.get(request.index);
  if (earlier) return earlier;
  const { item } = await ctx.runState.readPlanItem(plan, request.index);
  const outcome = await storeItem(ctx, request, item);
  lines.set(request.index, {
    index: request.index,
    id: item.id,
    status: outcome.status,
    task_id: request.taskId,
    attempts: request.attempts,
    credits_cost: request.creditsCost,
    images: outcome.images,
    error: outcome.error,
    ...(request.expiresAt !== undefined ? { expires_at: request.expiresAt } : {}),
  });
  const stored: StoredItem = {
    index: request.index,
    status: outcome.status,
    images: outcome.images.length,
  };
  if (outcome.error !== null) stored.error = outcome.error;
  done.set(request.index, stored);
  return stored;
}
