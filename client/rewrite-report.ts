// Rewriting a finished run's report from what is stored: retries that have ended are folded into
// the run's outcomes first, then the run's own writeReport activity runs here, in the CLI process
// (it only reads the plan and outcome files), so report.jsonl, summary.json and the gallery come
// out exactly as a run writes them.
import type { Client } from '@temporalio/client';
import { createActivityRuntime } from '../activities/index.js';
import { UserError } from '../common/errors.js';
import { zeroApiCalls } from '../common/item-counts.js';
import type { ApiCallCounts, WriteReportOutput } from '../common/types.js';
import { foldRetryOutcomes, listRetries, saveRetryRecord, type RetryRecord } from './retries.js';
import { readPlan, retryRecordsDir, runState, type RunLocation } from './run-files.js';
import { describeRun, runResultOf } from './runs.js';

export interface RewrittenReport extends WriteReportOutput {
  /** Retries whose outcomes are in this report. */
  retries: RetryRecord[];
  /** A retry still running: its outcomes come in with the next `report`. */
  running?: RetryRecord;
}

/** Folds every ended, not yet folded retry of the run, oldest first; stops at one still running. */
export async function foldEndedRetries(
  client: Client,
  location: RunLocation,
): Promise<{ folded: RetryRecord[]; running?: RetryRecord }> {
  const loaded = await readPlan(location.plan);
  const latest = await runState.latestOutcomes(location.plan, loaded.items);
  const folded: RetryRecord[] = [];
  for (const record of listRetries(retryRecordsDir(location), location.runId, location.execution)) {
    if (record.folded) {
      folded.push(record);
      continue;
    }
    const description = await describeRun(client, record.runId);
    if (!description) continue; // its start failed: nothing ran
    if (description.status.name === 'RUNNING') return { folded, running: record };
    await foldRetryOutcomes(
      { plan: location.plan, loaded, latest },
      { ...location.plan, planHash: record.manifestHash },
    );
    const result =
      description.status.name === 'COMPLETED'
        ? await runResultOf(client, record.runId, description.runId)
        : undefined;
    const done: RetryRecord = { ...record, folded: true, ...(result ? { apiCalls: result.apiCalls } : {}) };
    await saveRetryRecord(retryRecordsDir(location), done);
    folded.push(done);
  }
  return { folded };
}

function addCalls(into: ApiCallCounts, from: ApiCallCounts | undefined): void {
  if (!from) return;
  into.submit += from.submit;
  into.lookup += from.lookup;
  into.get += from.get;
}

export async function rewriteReport(client: Client, location: RunLocation): Promise<RewrittenReport> {
  if (location.status === 'RUNNING') {
    throw new UserError(
      'run_in_progress',
      `${location.runId} is still running; it writes its report when it ends (or cancel it first)`,
    );
  }
  const { folded, running } = await foldEndedRetries(client, location);
  // A run that did not complete has no result with its API calls: they count as 0.
  const apiCalls = zeroApiCalls();
  addCalls(apiCalls, location.result?.apiCalls);
  for (const record of folded) addCalls(apiCalls, record.apiCalls);
  const runtime = createActivityRuntime({ env: process.env });
  try {
    const written = await runtime.activities.writeReport({
      plan: location.plan,
      runId: location.runId,
      execution: location.execution,
      emulated: location.emulated,
      startedAt: location.startTime.toISOString(),
      apiCalls,
    });
    return { ...written, retries: folded, ...(running ? { running } : {}) };
  } finally {
    await runtime.close();
  }
}
