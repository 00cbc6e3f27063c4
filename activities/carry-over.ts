// carryOver (TRANSFER_TASK_QUEUE): an incremental run's unchanged items, a range of its plan at
// a time. Each item's stored result (PlannedItem.reuse) is checked where the item's paths now
// are: kept when it is there with its sha256, copied there when it is intact under its old path
// (another id, another path template), fetched again from its result URL when it is gone or
// altered. Each carried item gets an outcome line (completed, nothing charged, `reused_from` the
// run that made it); one whose result cannot be had any more is handed back to be generated.
//
// Like storeResults, the heartbeat carries what is done, so a retry resumes.
import { setMaxListeners } from 'node:events';
import { extname } from 'node:path';
import { isImageApiError } from '../api/index.js';
import type { CarryOverInput, CarryOverOutput } from '../common/types.js';
import type { PlannedItem, ReusedResult } from '../manifest/normalize.js';
import { DEFAULT_EXTENSION, renderResultPath } from '../manifest/result-paths.js';
import type { ImageRecord, OutcomeLine, PlanMeta } from '../runstate/index.js';
import type { ResultStore } from '../storage/result-store.js';
import type { ApiClients } from './api-clients.js';
import { activityContext, appendSequence, whileAlive } from './context.js';
import type { ResolvedDeps } from './deps.js';

/** What carryOver heartbeats: the items settled so far (all attempts). */
export interface CarryOverHeartbeat {
  lines: OutcomeLine[];
  regenerate: number[];
  restored: number;
  moved: number;
}

interface CarryContext {
  meta: PlanMeta;
  store: ResultStore;
  download: (url: string) => ReturnType<ReturnType<ApiClients['forPlan']>['download']>;
}

type Carried = { images: ImageRecord[]; restored: boolean; moved: boolean } | 'regenerate';

/** The item's path for image `k`, with the stored image's own extension. */
function targetPath(meta: PlanMeta, item: PlannedItem, k: number, stored: ImageRecord): string {
  const ext = extname(stored.path).slice(1) || DEFAULT_EXTENSION;
  return renderResultPath(meta.pathTemplate, { name: meta.name, item, index: k, ext });
}

async function carryItem(ctx: CarryContext, item: PlannedItem, reuse: ReusedResult): Promise<Carried> {
  const images: ImageRecord[] = [];
  let restored = false;
  let moved = false;
  for (const [k, stored] of reuse.images.entries()) {
    const path = targetPath(ctx.meta, item, k, stored);
    if (await ctx.store.has(path, stored)) {
      images.push({ ...stored, path });
      continue;
    }
    if (path !== stored.path && (await ctx.store.has(stored.path, stored))) {
      await ctx.store.copy(stored.path, path, stored);
      images.push({ ...stored, path });
      moved = true;
      continue;
    }
    try {
      const download = await ctx.download(stored.source_url);
      const put = await ctx.store.put(path, download.body, {
        'pixelmill-manifest': ctx.meta.name,
        'pixelmill-item-id': item.id,
        'pixelmill-image-index': String(k),
      });
      images.push({ ...stored, ...put, path });
      restored = true;
    } catch (error) {
      // Expired, gone, refused: the provider no longer has it. A failure that may heal (5xx,
      // network, a full disk) retries the activity instead.
      if (isImageApiError(error) && !error.retryable) return 'regenerate';
      throw error;
    }
  }
  return { images, restored, moved };
}

function outcomeOf(
  index: number,
  item: PlannedItem,
  reuse: ReusedResult,
  images: ImageRecord[],
): OutcomeLine {
  return {
    index,
    id: item.id,
    status: 'completed',
    task_id: reuse.task_id,
    // Nothing was tried or charged for it in this run.
    attempts: 0,
    credits_cost: 0,
    images,
    error: null,
    ...(reuse.expires_at !== undefined ? { expires_at: reuse.expires_at } : {}),
    reused_from: reuse.from,
  };
}

export function carryOverActivity(deps: { clients: ApiClients; resolved: ResolvedDeps }) {
  const { runState } = deps.resolved;
  return async function carryOver(input: CarryOverInput): Promise<CarryOverOutput> {
    const context = activityContext();
    if (context) setMaxListeners(0, context.cancellationSignal);
    const { meta, items } = await runState.readPlanItems(input.plan, input);
    const client = deps.clients.forPlan(meta);
    const signal = context?.cancellationSignal;
    const ctx: CarryContext = {
      meta,
      store: deps.resolved.resultStore(meta.outputDir, meta.objectStore),
      download: (url) => client.download(url, signal ? { signal } : {}),
    };
    const before = context?.info.heartbeatDetails as Partial<CarryOverHeartbeat> | undefined;
    const progress: CarryOverHeartbeat = {
      lines: before?.lines ?? [],
      regenerate: before?.regenerate ?? [],
      restored: before?.restored ?? 0,
      moved: before?.moved ?? 0,
    };
    const settled = new Set([...progress.lines.map((line) => line.index), ...progress.regenerate]);
    // Beaten on whileAlive's interval and when an item fails, not per item: each beat encodes all
    // the lines so far, and a beat per item made a range's work quadratic (5.7 s for 500 items).
    // An item settled after the last beat is only checked again by a retry: keeping is idempotent.
    const beat = (): void => context?.heartbeat(progress);
    await whileAlive(async () => {
      for (const [offset, item] of items.entries()) {
        const index = input.offset + offset;
        if (settled.has(index) || !item.reuse) continue;
        let carried: Carried;
        try {
          carried = await carryItem(ctx, item, item.reuse);
        } catch (error) {
          beat();
          throw error;
        }
        if (carried === 'regenerate') progress.regenerate.push(index);
        else {
          progress.lines.push(outcomeOf(index, item, item.reuse, carried.images));
          if (carried.restored) progress.restored++;
          if (carried.moved) progress.moved++;
        }
      }
    }, beat);
    await runState.appendOutcomes(input.plan, input.shard, progress.lines, appendSequence(context));
    return {
      reused: progress.lines.length,
      restored: progress.restored,
      moved: progress.moved,
      regenerate: progress.regenerate,
    };
  };
}
