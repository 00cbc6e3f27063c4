// The report files of a run, built from its plan and the newest outcome of each item:
// `report.jsonl` (report-line.ts), `summary.json` with the totals, and `index.html`, the gallery
// of both (gallery.ts), each replaced atomically in the run's local output directory. Memory
// holds the plan and one outcome per item, nothing more, so 100,000 items take a moment, not
// minutes.
import { join } from 'node:path';
import type { ItemStatus, NotCompletedGroup, WriteReportInput } from '../common/types.js';
import type { RunRates } from '../governor/types.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { writeFileAtomic, type OutcomeLine, type PlanMeta } from '../runstate/index.js';
import { GALLERY_FILE, writeGallery, type GalleryEntry } from './gallery.js';
import { REPORT_FILE, reportLine, SUMMARY_FILE, type ReportLine } from './report-line.js';

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

export interface ReportSources {
  /** The run's name and its local output directory. */
  meta: Pick<PlanMeta, 'name' | 'outputDir' | 'creditsEstimated' | 'provider'>;
  /** Where the files are written; default `meta.outputDir` (an S3 run's go to a scratch folder). */
  dir?: string;
  items: readonly PlannedItem[];
  /** The newest outcome of each item, by plan index. */
  outcomes: readonly (OutcomeLine | undefined)[];
  run: Omit<WriteReportInput, 'plan'>;
  /** The rates the run went at, asked once report.jsonl is written; undefined leaves them out. */
  rates: () => Promise<RunRates | undefined>;
  /** What the run did with the output's catalog (summary.json's `catalog`). */
  catalog?: CatalogSummary;
  now: () => number;
}

/** summary.json's `catalog`: what was generated, carried over, and what the manifest no longer has. */
export interface CatalogSummary {
  /** The run whose catalog this run compared with (workflow id @ execution), if any. */
  basis: string | null;
  generated: number;
  /** Items carried over from earlier runs, nothing charged (`reused_from` in their lines). */
  reused: number;
  restored: number;
  moved: number;
  regenerated: number;
  /** Items of the last run the manifest no longer has: left in storage, or deleted with --prune. */
  removed: number;
  removed_ids: string[];
  pruned: boolean;
}

export interface WrittenReport {
  byStatus: Record<ItemStatus, number>;
  images: number;
  credits: number;
  notCompleted: NotCompletedGroup[];
  reportFile: string;
  summaryFile: string;
  galleryFile: string;
  rates: RunRates | undefined;
}

/** Plan indices in manifest order: an incremental plan puts the items it generates first. */
function manifestOrder(items: readonly PlannedItem[]): number[] {
  const order = items.map((_, index) => index);
  if (items.some((item) => item.position !== undefined))
    order.sort((a, b) => (items[a]!.position ?? a) - (items[b]!.position ?? b));
  return order;
}

/** Writes report.jsonl, summary.json and index.html into the run's output directory (or `dir`). */
export async function writeReportFiles(sources: ReportSources): Promise<WrittenReport> {
  const { meta, items, outcomes, run } = sources;
  const byStatus: Record<ItemStatus, number> = {
    completed: 0,
    failed: 0,
    cancelled: 0,
    expired: 0,
    skipped: 0,
  };
  let images = 0;
  let credits = run.creditsRejected ?? 0;
  /** Images whose checks failed, by check and level: `{aspect_ratio: {error: 2}}`. */
  const findings: Record<string, { error: number; warn: number }> = {};
  /** Items not completed, by their error's code: `task_timeout`, `deadline`, `build_request_failed`, ... */
  const byCode: Record<string, number> = {};
  const notCompleted = new NotCompletedGroups();
  const order = manifestOrder(items);
  function* lines(): Generator<string> {
    for (const index of order) {
      const line = reportLine(items[index]!, outcomes[index]);
      byStatus[line.status] += 1;
      if (line.error) byCode[line.error.code] = (byCode[line.error.code] ?? 0) + 1;
      if (line.status !== 'completed') notCompleted.add(line);
      images += line.images.length;
      for (const finding of line.images.flatMap((image) => image.checks ?? []))
        (findings[finding.check] ??= { error: 0, warn: 0 })[finding.level]++;
      credits += line.credits_cost;
      yield `${JSON.stringify(line)}\n`;
    }
  }
  const dir = sources.dir ?? meta.outputDir;
  const reportFile = join(dir, REPORT_FILE);
  const summaryFile = join(dir, SUMMARY_FILE);
  const galleryFile = join(dir, GALLERY_FILE);
  await writeFileAtomic(reportFile, lines());

  const rates = await sources.rates();
  const summary = {
    manifest: meta.name,
    run_id: run.runId,
    items: items.length,
    counts: byStatus,
    not_completed_by_code: byCode,
    tasks_given_up: run.tasksGivenUp ?? 0,
    checks: { failed: findings, tasks_regenerated: run.tasksRejected ?? 0 },
    images,
    credits_charged: credits,
    // The provider reports no cost: the credits are the manifest's pricing applied to what was made.
    ...(meta.creditsEstimated ? { credits_estimated: true } : {}),
    provider: meta.provider ?? 'apimart',
    api_calls: { submit: run.apiCalls.submit, lookup: run.apiCalls.lookup, get: run.apiCalls.get },
    started_at: run.startedAt,
    finished_at: new Date(sources.now()).toISOString(),
    emulated: run.emulated,
    ...(rates ? { rates } : {}),
    ...(run.batches ? { batches: run.batches } : {}),
    ...(sources.catalog ? { catalog: sources.catalog } : {}),
  };
  await writeFileAtomic(summaryFile, [`${JSON.stringify(summary, null, 2)}\n`]);
  function* galleryEntries(): Generator<GalleryEntry> {
    for (const index of order) {
      const item = items[index]!;
      yield { item, line: reportLine(item, outcomes[index]) };
    }
  }
  await writeGallery(galleryFile, summary, galleryEntries());
  return {
    byStatus,
    images,
    credits,
    notCompleted: notCompleted.groups(),
    reportFile,
    summaryFile,
    galleryFile,
    rates,
  };
}
