// writeReport: the activity that writes a run's report files (report/write-report.ts) from its
// run state, with what only a worker knows: the rates its governor holds at the end. An S3
// run's files, built in a scratch folder of the worker, are published beside its images.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ItemCounts, WriteReportInput, WriteReportOutput } from '../common/types.js';
import { zeroCounts } from '../common/item-counts.js';
import { accountOfQueue } from '../common/names.js';
import { GALLERY_FILE } from '../report/gallery.js';
import { REPORT_FILE, SUMMARY_FILE } from '../report/report-line.js';
import { writeReportFiles, type WrittenReport } from '../report/write-report.js';
import type { RunStateStore } from '../runstate/index.js';
import { removePartialWrites } from '../storage/local.js';
import { publishReportFiles, type PublishedFile } from '../storage/publish.js';
import { ratesInForce } from '../temporal/governor-rates.js';
import { activityContext } from './context.js';
import { catalogUpdate } from './catalog-update.js';
import type { ResolvedDeps } from './deps.js';

export interface WriteReportDeps {
  runState: RunStateStore;
  now: () => number;
  /** The run's store: for an S3 output, the report files built locally are published there too. */
  resultStore: ResolvedDeps['resultStore'];
}

export function writeReportActivity(deps: WriteReportDeps) {
  return async function writeReport(input: WriteReportInput): Promise<WriteReportOutput> {
    const { meta, items } = await deps.runState.readPlan(input.plan);
    const outcomes = await deps.runState.latestOutcomes(input.plan, items);
    const catalog = await catalogUpdate(deps.runState, { meta, items, outcomes, input });
    // Nothing writes images any more: what a killed worker left half-written goes.
    if (!meta.objectStore) await removePartialWrites(meta.outputDir);
    // An S3 run's files are built in a scratch folder of this worker, then published to the store.
    const scratch = meta.objectStore ? await mkdtemp(join(tmpdir(), 'pixelmill-report-')) : undefined;
    try {
      const written = await writeReportFiles({
        meta,
        ...(scratch ? { dir: scratch } : {}),
        items,
        outcomes,
        run: input,
        // The rates the run went at, as its governor knows them at its end (or its fixed rate);
        // none for a batch run, whose few calls skip the rate gate (its batches say what it did).
        rates: async () => {
          if (input.batches) return undefined;
          const context = activityContext();
          const apiAccount = context && accountOfQueue(context.info.taskQueue);
          return context && ratesInForce(context.client, { ...meta, ...(apiAccount ? { apiAccount } : {}) });
        },
        ...(catalog ? { catalog: catalog.summary } : {}),
        now: deps.now,
      });
      const published =
        meta.objectStore && scratch
          ? await publishReportFiles(deps.resultStore(meta.outputDir, meta.objectStore), scratch, [
              REPORT_FILE,
              SUMMARY_FILE,
              GALLERY_FILE,
            ])
          : [];
      // Last: a retry of this activity must find the index this run started from.
      await catalog?.write(deps.resultStore(meta.outputDir, meta.objectStore), written.rates);
      return outputOf(written, published);
    } finally {
      if (scratch) await rm(scratch, { recursive: true, force: true });
    }
  };
}

function outputOf(written: WrittenReport, published: PublishedFile[]): WriteReportOutput {
  const locationOf = (name: string, local: string): string =>
    published.find((file) => file.name === name)?.location ?? local;
  const counts: ItemCounts = { ...zeroCounts(), ...written.byStatus };
  return {
    counts,
    images: written.images,
    creditsSpent: written.credits,
    reportFile: locationOf(REPORT_FILE, written.reportFile),
    summaryFile: locationOf(SUMMARY_FILE, written.summaryFile),
    galleryFile: locationOf(GALLERY_FILE, written.galleryFile),
    notCompleted: written.notCompleted,
  };
}
