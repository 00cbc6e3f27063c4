// `pixelmill status RUN [--json]`: where a run is. A running run answers its progress query; a
// closed one is read from its report's summary.json (which includes folded retries), else from
// its workflow result. `--json` prints one object with the same fields whatever the run's state.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { Command } from 'commander';
import picocolors from 'picocolors';
import { REPORT_FILE, SUMMARY_FILE } from '../../report/report-line.js';
import type { PlanMeta } from '../../runstate/index.js';
import type { ApiCallCounts, CarryOverTotals, ItemCounts, PlanRef, RunState } from '../../common/types.js';
import { colorEnabled } from '../display/display.js';
import { finishedItems, zeroCounts } from '../../common/item-counts.js';
import { liveProgress } from '../progress.js';
import { listRetries } from '../retries.js';
import type { LoadedManifest } from '../../manifest/load.js';
import {
  locateRun,
  readRunFile,
  retryRecordsDir,
  runFileLocation,
  runState,
  type RunLocation,
} from '../run-files.js';
import { describeRun } from '../runs.js';
import { runScheduleText, scheduleOfRun, type RunSchedule } from '../schedules.js';
import { describeRetrying, type Retrying } from '../retrying.js';
import { pendingRequests, workersServing, type PendingRequest } from '../run-control.js';
import { workflowUrl } from '../session.js';
import { rootMessage } from '../watch.js';
import { examples, localTime, RUN_ARGUMENT, withRun } from './with-run.js';
import type { RunRates } from '../../governor/types.js';
import { batchParts } from '../../common/batch-totals.js';
import type { BatchTotals } from '../../common/batch-types.js';
import type { CatalogSummary } from '../../report/write-report.js';

export interface RunStatus {
  runId: string;
  /** Temporal's status: RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, ... */
  status: string;
  /** The run's own state while it runs (preparing, running, paused, ...); null once closed. */
  state: RunState | null;
  reason: string | null;
  startTime: string;
  closeTime: string | null;
  items: number | null;
  counts: ItemCounts | null;
  images: number | null;
  creditsSpent: number | null;
  /** Estimated credits the API holds for unfinished tasks, while a run with a budget runs. */
  creditsReserved: number | null;
  budgetCredits: number | null;
  /** The run's deadline (ISO 8601), while it runs and has one. */
  deadline: string | null;
  /** A failure Temporal is retrying now (e.g. the API cannot be reached), while the run runs. */
  retrying: Retrying | null;
  /** Tasks given up after limits.task_timeout so far (each resubmitted or failed), while the run runs. */
  tasksGivenUp: number | null;
  /** Completed tasks whose images failed a check and were generated again so far, while the run runs. */
  tasksRejected: number | null;
  apiCalls: ApiCallCounts | null;
  /**
   * The rates the run's calls go at and why (fixed, or discovered per group), while it runs and at
   * its end; null for a batch run, whose few calls skip the rate gate (see `batches`).
   */
  rates: RunRates | null;
  /** A batch run's batches: in flight, ended by how, their requests by state, enqueued images, next poll. */
  batches: BatchTotals | null;
  /**
   * What the run carried over from the output's catalog (reused, restored, moved, regenerated):
   * as far as it got while it runs; at its end with what it generated and what was removed.
   */
  catalog: CarryOverTotals | CatalogSummary | null;
  /** Where the counts come from: `live` (queries), `report` (summary.json), `result`, or `none`. */
  source: 'live' | 'report' | 'result' | 'none';
  outputDir: string | null;
  report: string | null;
  retries: { runId: string; items: number; inReport: boolean }[];
  /** Pause, resume and cancel requests the run has not taken yet (no worker serves it, or not yet). */
  pendingRequests: PendingRequest[] | null;
  /** Why a run that did not complete ended: its failure, or the reason it was terminated. */
  failure: string | null;
  ui: string | null;
  /** The schedule that started the run (`pixelmill schedule`), with its next firing; null for a run by hand. */
  schedule: RunSchedule | null;
}

interface Summary {
  run_id: string;
  items: number;
  counts: { completed: number; failed: number; cancelled: number; expired: number; skipped: number };
  images: number;
  credits_charged: number;
  api_calls: ApiCallCounts;
  rates?: RunRates;
  batches?: BatchTotals;
  catalog?: CatalogSummary;
}

async function readSummary(location: RunLocation, runId: string): Promise<Summary | undefined> {
  try {
    const summary = JSON.parse((await readRunFile(location, SUMMARY_FILE)) ?? '') as Summary;
    return summary.run_id === runId ? summary : undefined;
  } catch {
    return undefined;
  }
}

/** The plan's settings (the items are not read); undefined before the plan exists. */
async function planMeta(
  plan: PlanRef,
): Promise<Partial<Pick<PlanMeta, 'budgetCredits' | 'itemCount'>> | undefined> {
  try {
    return await runState.readPlanMeta(plan);
  } catch {
    return undefined;
  }
}

const planBudget = async (plan: PlanRef): Promise<number | null> =>
  (await planMeta(plan))?.budgetCredits ?? null;
const planItemCount = async (plan: PlanRef): Promise<number | null> =>
  (await planMeta(plan))?.itemCount ?? null;

/** Temporal's statuses of a run that ended without its report: failed, terminated, timed out, cancelled. */
const ENDED_BADLY = new Set(['FAILED', 'TERMINATED', 'TIMED_OUT', 'CANCELLED']);

/** The message of the failure that ended the run (a terminated run's is the reason given). */
async function failureOf(client: Client, runId: string): Promise<string | null> {
  try {
    await client.workflow.getHandle(runId).result();
    return null;
  } catch (error) {
    return error instanceof WorkflowFailedError ? rootMessage(error) : null;
  }
}

/** The report's final states are the counts' own names. */
function countsOfSummary(summary: Summary): ItemCounts {
  return { ...zeroCounts(), ...summary.counts };
}

export async function runStatus(
  client: Client,
  runId: string,
  ui: string | undefined,
  manifest?: LoadedManifest,
): Promise<RunStatus> {
  const description = (await describeRun(client, runId))!;
  const status: RunStatus = {
    runId,
    status: description.status.name,
    state: null,
    reason: null,
    startTime: description.startTime.toISOString(),
    closeTime: description.closeTime?.toISOString() ?? null,
    items: null,
    counts: null,
    images: null,
    creditsSpent: null,
    creditsReserved: null,
    budgetCredits: null,
    deadline: null,
    retrying: null,
    tasksGivenUp: null,
    tasksRejected: null,
    apiCalls: null,
    rates: null,
    batches: null,
    catalog: null,
    source: 'none',
    outputDir: null,
    report: null,
    retries: [],
    pendingRequests: [],
    failure: null,
    ui: ui ?? null,
    schedule: await scheduleOfRun(client, description.memo),
  };
  const location = await locateRun(client, runId, manifest).catch(() => undefined);
  if (location) {
    status.outputDir = location.outputDir;
    status.budgetCredits = await planBudget(location.plan);
  }
  if (description.status.name === 'RUNNING') {
    status.pendingRequests = await pendingRequests(client, description).catch(() => null);
    // No answer in time means no worker is polling (an embedded run whose CLI is not running).
    // When the server lists none (pollers unreadable: ask anyway), the query is not worth its wait.
    const workers = await workersServing(client, description).catch(() => undefined);
    const live =
      workers === 0
        ? undefined
        : await liveProgress(client, runId, { deadlineMs: 5_000 }).catch(() => undefined);
    if (live) {
      Object.assign(status, {
        state: live.run.state,
        reason: live.run.reason ?? null,
        items: live.run.itemCount,
        counts: live.counts,
        images: live.images,
        creditsSpent: live.creditsSpent,
        creditsReserved: live.creditsReserved ?? null,
        budgetCredits: live.run.budgetCredits ?? null,
        deadline: live.run.deadlineAt !== undefined ? new Date(live.run.deadlineAt).toISOString() : null,
        retrying: live.retrying ?? null,
        tasksGivenUp: live.tasksGivenUp ?? 0,
        tasksRejected: live.tasksRejected ?? 0,
        apiCalls: live.apiCalls,
        rates: live.rates ?? null,
        batches: live.batches ?? null,
        catalog: live.run.carryOver ?? null,
        source: 'live',
      });
    } else if (location) {
      status.items = await planItemCount(location.plan);
    }
    return status;
  }
  if (ENDED_BADLY.has(description.status.name)) status.failure = await failureOf(client, runId);
  if (!location) return status;
  status.retries = listRetries(retryRecordsDir(location), runId, location.execution).map((record) => ({
    runId: record.runId,
    items: record.items,
    inReport: record.folded,
  }));
  const summary = await readSummary(location, runId);
  if (summary) {
    Object.assign(status, {
      items: summary.items,
      counts: countsOfSummary(summary),
      images: summary.images,
      creditsSpent: summary.credits_charged,
      apiCalls: summary.api_calls,
      rates: summary.rates ?? null,
      batches: summary.batches ?? null,
      catalog: summary.catalog ?? null,
      source: 'report',
      report: runFileLocation(location, REPORT_FILE),
    });
  } else if (location.result) {
    const { result } = location;
    Object.assign(status, {
      items: finishedItems(result.counts),
      counts: result.counts,
      images: result.images,
      creditsSpent: result.creditsSpent,
      apiCalls: result.apiCalls,
      source: 'result',
      report: result.reportFile,
    });
  }
  return status;
}

function statusText(status: RunStatus, color: boolean): string {
  const c = picocolors.createColors(color);
  const closed = status.closeTime ? `, ended ${localTime(new Date(status.closeTime))}` : '';
  const lines = [
    `${c.bold(status.runId)}: ${status.status.toLowerCase()}${status.state ? ` (${status.state})` : ''}` +
      ` — started ${localTime(new Date(status.startTime))}${closed}`,
  ];
  const { counts } = status;
  if (counts && status.items !== null) {
    const extra = (['expired', 'cancelled', 'skipped'] as const)
      .filter((key) => counts[key] > 0)
      .map((key) => `${key} ${counts[key]}`);
    const inFlight =
      status.source === 'live'
        ? [
            `queued ${counts.queued}`,
            `submitted ${counts.submitted}`,
            `processing ${counts.processing}`,
            `storing ${counts.storing}`,
          ]
        : [];
    lines.push(
      [
        `${finishedItems(counts)}/${status.items} items final`,
        ...inFlight,
        c.green(`completed ${counts.completed}`),
        (counts.failed > 0 ? c.red : (text: string) => text)(`failed ${counts.failed}`),
        ...extra,
      ].join(' · '),
    );
    const budget = status.budgetCredits !== null ? ` of ${status.budgetCredits}` : '';
    lines.push(`images ${status.images ?? 0} · credits ${status.creditsSpent ?? 0}${budget}`);
    if (status.batches) lines.push(batchParts(status.batches, Date.now()).join(' · '));
  } else if (status.status === 'RUNNING') {
    lines.push('no progress: no worker answered (an embedded run progresses while `pixelmill run` runs)');
  }
  if (status.failure) lines.push(c.red(`${status.status.toLowerCase()}: ${status.failure}`));
  if (status.outputDir && status.source !== 'report') lines.push(`output: ${status.outputDir}`);
  if (status.deadline) lines.push(`deadline ${status.deadline}`);
  if (status.reason) lines.push(c.yellow(status.reason));
  if (status.retrying) lines.push(c.red(describeRetrying(status.retrying)));
  for (const request of status.pendingRequests ?? []) {
    const at = localTime(new Date(request.sentAt));
    lines.push(c.yellow(`pending: ${request.signal} (requested ${at}), not yet taken by the run`));
  }
  for (const retry of status.retries) {
    lines.push(`retry ${retry.runId}: ${retry.items} items${retry.inReport ? ', in the report' : ''}`);
  }
  if (status.report) lines.push(`report: ${status.report}`);
  if (status.schedule) lines.push(runScheduleText(status.schedule));
  if (status.ui) lines.push(`Temporal Web UI: ${status.ui}`);
  return lines.join('\n');
}

export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description("show a run's state, counts per state, credits, report and Temporal Web UI link")
    .argument(...RUN_ARGUMENT)
    .option('--json', 'print one JSON object (fields documented in docs/cli.md)')
    .addHelpText(
      'after',
      examples(
        'pixelmill status manifests/demo.yaml',
        'pixelmill status pixelmill/demo --json | jq .counts',
      ) + '\n\nExit codes: 0 the status was shown (whatever the run state), 1 error (e.g. no such run).',
    )
    .action((run: string, options: { json?: boolean }) =>
      withRun(run, async (session, runId, manifest) => {
        const status = await runStatus(session.client, runId, workflowUrl(session, runId), manifest);
        process.stdout.write(
          options.json
            ? `${JSON.stringify(status, null, 2)}\n`
            : `${statusText(status, colorEnabled(process.stdout))}\n`,
        );
      }),
    );
}
