// writeReport: the run's public output contract (issue #3, section 5). `report.jsonl` has one
// line per manifest item, in manifest order, with exactly the fields other tools read;
// `summary.json` has the totals; `index.html` is the gallery of both (activities/gallery.ts). All
// are replaced atomically. Memory holds the plan and one outcome per item, nothing more, so
// 100,000 items take a moment, not minutes.
import { join } from 'node:path';
import type {
  ItemCounts,
  ItemStatus,
  NotCompletedGroup,
  WriteReportInput,
  WriteReportOutput,
} from '../common/types.js';
import { removePartialWrites } from '../storage/local.js';
import { publishReportFiles } from '../storage/publish.js';
import type { ResolvedDeps } from './deps.js';
import { writeFileAtomic } from './files.js';
import { GALLERY_FILE, writeGallery, type GalleryEntry } from './gallery.js';
import { latestOutcomes, type OutcomeLine } from './outcomes.js';
import type { PlanCache } from './plan.js';
import { activityContext } from './context.js';
import { accountOfQueue } from '../common/names.js';
import { ratesInForce } from '../temporal/governor-rates.js';
import { zeroCounts } from '../workflows/tracking.js';

export const REPORT_FILE = 'report.jsonl';
export const SUMMARY_FILE = 'summary.json';

export const NOT_RUN = {
  type: 'NotRun',
  code: 'not_run',
  message: 'the run ended before this item was finished: it was not submitted, or its task was not collected',
} as const;

/** One line of report.jsonl; the field order here is the order in the file. */
export interface ReportLine {
  id: string;
  status: ItemStatus;
  task_id: string | null;
  attempts: number;
  credits_cost: number;
  images: { path: string; sha256: string; bytes: number; source_url: string }[];
  error: { type: string; code: string; message: string } | null;
}

function reportLine(id: string, outcome: OutcomeLine | undefined): ReportLine {
  if (outcome === undefined) {
    return {
      id,
      status: 'cancelled',
      task_id: null,
      attempts: 0,
      credits_cost: 0,
      images: [],
      error: { ...NOT_RUN },
    };
  }
  return {
    id,
    status: outcome.status,
    task_id: outcome.task_id,
    attempts: outcome.attempts,
    credits_cost: outcome.credits_cost,
    images: outcome.images.map((image) => ({
      path: image.path,
      sha256: image.sha256,
      bytes: image.bytes,
      source_url: image.source_url,
    })),
    error:
      outcome.error === null
        ? null
        : { type: outcome.error.type, code: outcome.error.code, message: outcome.error.message },
  };
}

/** Kinds kept apart in a run's result (each with a few ids); the rest are grouped per status. */
const MAX_GROUPS = 12;
const IDS_PER_GROUP = 3;

/**
 * The items that did not complete, grouped by status, error type and code. Past MAX_GROUPS kinds
 * (an API inventing codes), the rest go to a group of type and code `various` for their status.
 */
class NotCompletedGroups {
  readonly #groups = new Map<string, NotCompletedGroup>();

  add(line: ReportLine): void {
    const status = line.status as NotCompletedGroup['status'];
    const type = line.error?.type ?? 'none';
    const code = line.error?.code ?? 'none';
    const key = `${status} ${type} ${code}`;
    const various = `${status} various`;
    const group =
      this.#groups.get(key) ??
      (this.#groups.size < MAX_GROUPS
        ? this.#start(key, { status, type, code })
        : (this.#groups.get(various) ?? this.#start(various, { status, type: 'various', code: 'various' })));
    group.count++;
    if (group.ids.length < IDS_PER_GROUP) group.ids.push(line.id);
  }

  #start(key: string, kind: Pick<NotCompletedGroup, 'status' | 'type' | 'code'>): NotCompletedGroup {
    const group = { ...kind, count: 0, ids: [] };
    this.#groups.set(key, group);
    return group;
  }

  /** Largest first. */
  groups(): NotCompletedGroup[] {
    return [...this.#groups.values()].sort((a, b) => b.count - a.count);
  }
}

export interface WriteReportDeps {
  plans: PlanCache;
  now: () => number;
  /** The run's store: for an S3 output, the report files built locally are published there too. */
  resultStore: ResolvedDeps['resultStore'];
}

export function writeReportActivity(deps: WriteReportDeps) {
  return async function writeReport(input: WriteReportInput): Promise<WriteReportOutput> {
    const { meta, items } = await deps.plans.get(input.plan);
    const outcomes = await latestOutcomes(input.plan, items);

    const byStatus: Record<ItemStatus, number> = {
      completed: 0,
      failed: 0,
      cancelled: 0,
      expired: 0,
      skipped: 0,
    };
    let images = 0;
    let credits = 0;
    /** Items not completed, by their error's code: `task_timeout`, `deadline`, `build_request_failed`, ... */
    const byCode: Record<string, number> = {};
    const notCompleted = new NotCompletedGroups();
    function* lines(): Generator<string> {
      for (const [index, item] of items.entries()) {
        const line = reportLine(item.id, outcomes[index]);
        byStatus[line.status] += 1;
        if (line.error) byCode[line.error.code] = (byCode[line.error.code] ?? 0) + 1;
        if (line.status !== 'completed') notCompleted.add(line);
        images += line.images.length;
        credits += line.credits_cost;
        yield `${JSON.stringify(line)}\n`;
      }
    }
    // Nothing writes images any more: what a killed worker left half-written goes.
    if (!meta.objectStore) await removePartialWrites(meta.outputDir);
    const reportFile = join(meta.outputDir, REPORT_FILE);
    const summaryFile = join(meta.outputDir, SUMMARY_FILE);
    await writeFileAtomic(reportFile, lines());

    // The rates the run went at, as its governor knows them at its end (or its fixed rate).
    const context = activityContext();
    const apiAccount = context && accountOfQueue(context.info.taskQueue);
    const rates =
      context && (await ratesInForce(context.client, { ...meta, ...(apiAccount ? { apiAccount } : {}) }));
    const summary = {
      manifest: meta.name,
      run_id: input.runId,
      items: items.length,
      counts: byStatus,
      not_completed_by_code: byCode,
      tasks_given_up: input.tasksGivenUp ?? 0,
      images,
      credits_charged: credits,
      api_calls: { submit: input.apiCalls.submit, lookup: input.apiCalls.lookup, get: input.apiCalls.get },
      started_at: input.startedAt,
      finished_at: new Date(deps.now()).toISOString(),
      emulated: input.emulated,
      ...(rates ? { rates } : {}),
    };
    await writeFileAtomic(summaryFile, [`${JSON.stringify(summary, null, 2)}\n`]);
    function* galleryEntries(): Generator<GalleryEntry> {
      for (const [index, item] of items.entries()) yield { item, line: reportLine(item.id, outcomes[index]) };
    }
    await writeGallery(join(meta.outputDir, GALLERY_FILE), summary, galleryEntries());
    const published = meta.objectStore
      ? await publishReportFiles(deps.resultStore(meta.outputDir, meta.objectStore), meta.outputDir, [
          REPORT_FILE,
          SUMMARY_FILE,
          GALLERY_FILE,
        ])
      : [];
    const locationOf = (name: string, local: string): string =>
      published.find((file) => file.name === name)?.location ?? local;

    const counts: ItemCounts = { ...zeroCounts(), ...byStatus };
    return {
      counts,
      images,
      creditsSpent: credits,
      reportFile: locationOf(REPORT_FILE, reportFile),
      summaryFile: locationOf(SUMMARY_FILE, summaryFile),
      galleryFile: locationOf(GALLERY_FILE, join(meta.outputDir, GALLERY_FILE)),
      notCompleted: notCompleted.groups(),
    };
  };
}
