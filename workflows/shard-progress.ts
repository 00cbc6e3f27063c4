// What a shard tells about itself: its progress (query and the run's signal), the UI's current
// details, the search attributes, and its result. Told often enough to be live, seldom enough to
// keep the history small.
import {
  getExternalWorkflowHandle,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { shardProgressSignal } from '../common/names.js';
import { countAttributes, MANIFEST_ATTRIBUTE } from '../common/search-attributes.js';
import type { ShardInput, ShardProgress, ShardResult } from '../common/types.js';
import { plural } from '../common/words.js';
import { creditsReserved, creditsSpent } from './shard-credits.js';
import type { ShardItems } from './shard-items.js';
import { finishedItems } from '../common/item-counts.js';

/** Finished items between search-attribute upserts: about ten per shard, not one per item. */
const PUBLISH_STEP = 50;

export class ShardProgressPublisher {
  /** Only if the run passed its search attributes on (common/search-attributes.ts). */
  readonly #indexed = workflowInfo().typedSearchAttributes.get(MANIFEST_ATTRIBUTE) !== undefined;
  #publishedFinished: number;
  #toldRun: number;

  constructor(
    private readonly input: ShardInput,
    private readonly items: ShardItems,
  ) {
    this.#publishedFinished = this.#toldRun = finishedItems(items.counts());
  }

  progress(): ShardProgress {
    const { state: s } = this.items;
    const reserved = creditsReserved(this.items.state);
    return {
      shard: this.input.shard.index,
      counts: this.items.counts(),
      creditsSpent: creditsSpent(this.items.state),
      ...(reserved !== undefined ? { creditsReserved: reserved } : {}),
      apiCalls: { ...s.apiCalls },
      images: s.images,
      tasksGivenUp: s.givenUp ?? 0,
      ...(s.checkRejected ? { tasksRejected: s.checkRejected } : {}),
      paused: s.paused,
      cancelled: s.cancelled,
    };
  }

  /** What the shard returns to the run once it is done. */
  result(end: { stopReason: string | undefined; endedByDeadline: number }): ShardResult {
    const { counts, creditsSpent, apiCalls, images, tasksGivenUp } = this.progress();
    const { busyPollMs } = this.items.state;
    return {
      shard: this.input.shard.index,
      counts,
      creditsSpent,
      apiCalls,
      images,
      ...(end.stopReason ? { stopReason: end.stopReason } : {}),
      ...(busyPollMs !== undefined ? { pollMs: busyPollMs } : {}),
      ...(end.endedByDeadline > 0 ? { endedByDeadline: end.endedByDeadline } : {}),
      ...(tasksGivenUp ? { tasksGivenUp } : {}),
      // Charged tasks whose images the run does not keep (rejected by a check, or deleted by the
      // provider before they were stored): their credits count in what the report says was charged.
      ...(this.items.state.checkRejected || this.items.state.lostCredits
        ? {
            tasksRejected: this.items.state.checkRejected ?? 0,
            creditsRejected:
              (this.items.state.checkRejectedCredits ?? 0) + (this.items.state.lostCredits ?? 0),
          }
        : {}),
    };
  }

  /** Signals the run this shard's progress; rejects when the run refuses it (workflows/run-check.ts). */
  tellRun(): Promise<void> {
    return getExternalWorkflowHandle(this.input.runId).signal(shardProgressSignal, this.progress());
  }

  /**
   * The UI's current details on every call; the run's, every limits.progressStep items; the
   * search attributes every PUBLISH_STEP items, or now when `force`.
   */
  publish(force: boolean): void {
    const counts = this.items.counts();
    const done = finishedItems(counts);
    const givenUp = this.items.state.givenUp;
    const rejected = this.items.state.checkRejected;
    setCurrentDetails(
      `${done} of ${plural(this.input.shard.count, 'item')} final: ${counts.completed} completed, ${counts.failed} failed; ` +
        `${counts.submitted + counts.processing} at the API, ${counts.storing} storing, ${counts.queued} queued.` +
        (givenUp ? ` ${plural(givenUp, 'task')} given up after limits.task_timeout.` : '') +
        (rejected
          ? ` ${plural(rejected, 'task')} with images rejected by the checks (items generated again).`
          : ''),
    );
    const step = this.input.limits.progressStep;
    if (step !== undefined && Math.floor(done / step) > Math.floor(this.#toldRun / step)) {
      this.#toldRun = done;
      void this.tellRun().catch(() => undefined);
    }
    const published = this.#publishedFinished;
    if (!this.#indexed || done === published || (!force && done - published < PUBLISH_STEP)) return;
    this.#publishedFinished = done;
    upsertSearchAttributes(countAttributes(counts, creditsSpent(this.items.state)));
  }
}
