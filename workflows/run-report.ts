// The end of a run: its report files written by an activity from the outcomes its shards
// recorded, and the result the workflow returns.
import { workflowInfo } from '@temporalio/workflow';
import { describeOutcome } from '../common/item-counts.js';
import type { PreparedRun, RunInput, RunResult } from '../common/types.js';
import type { ActivitiesOn } from './activities.js';
import { median } from './run-details.js';
import type { RunTotals } from './run-totals.js';

export async function writeRunReport(
  activities: Pick<ActivitiesOn, 'writeReport'>,
  run: { input: RunInput; plan: PreparedRun; runId: string; startedAt: string; totals: RunTotals },
): Promise<RunResult> {
  const { input, plan, runId, startedAt, totals } = run;
  const { finished } = totals;
  const report = await activities.writeReport.executeWithOptions(
    { summary: 'write report.jsonl and summary.json' },
    [
      {
        plan: plan.plan,
        runId,
        execution: workflowInfo().runId,
        emulated: input.emulated,
        startedAt,
        apiCalls: finished.apiCalls,
        ...(finished.tasksGivenUp > 0 ? { tasksGivenUp: finished.tasksGivenUp } : {}),
        ...(finished.tasksRejected > 0
          ? { tasksRejected: finished.tasksRejected, creditsRejected: finished.creditsRejected }
          : {}),
        ...(totals.learnedGenerationMs?.length ? { generationMs: median(totals.learnedGenerationMs) } : {}),
        ...(totals.carryOver ? { carryOver: totals.carryOver } : {}),
        ...(finished.batches ? { batches: finished.batches } : {}),
      },
    ],
  );
  return {
    outcome: describeOutcome(report.counts, plan.itemCount, report.creditsSpent),
    name: plan.name,
    counts: report.counts,
    images: report.images,
    creditsSpent: report.creditsSpent,
    apiCalls: finished.apiCalls,
    reportFile: report.reportFile,
    summaryFile: report.summaryFile,
    ...(report.galleryFile !== undefined ? { galleryFile: report.galleryFile } : {}),
    ...(report.notCompleted?.length ? { notCompleted: report.notCompleted } : {}),
    stateDir: plan.plan.stateDir,
    ...(totals.endedByDeadline > 0 ? { endedByDeadline: totals.endedByDeadline } : {}),
    ...(totals.carryOver ? { carryOver: totals.carryOver } : {}),
    ...(finished.batches ? { batches: finished.batches } : {}),
  };
}
