// `pixelmill list [--json] [--limit N]`: the runs on this Temporal, newest first. Counts come from
// the run's search attributes when the server has them (no extra calls), else from the result of
// a completed run, else from the progress query of a running one (with a short deadline: with no
// worker polling, a query would wait); a run that cannot say shows "-".
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { InvalidArgumentError, type Command } from 'commander';
import picocolors from 'picocolors';
import {
  COMPLETED_ATTRIBUTE,
  CREDITS_ATTRIBUTE,
  FAILED_ATTRIBUTE,
  ITEMS_ATTRIBUTE,
} from '../../common/search-attributes.js';
import { runResultOf } from '../runs.js';
import { runScheduleText, scheduleOfRun, type RunSchedule } from '../schedules.js';
import { colorEnabled } from '../display/display.js';
import { finishedItems } from '../../common/item-counts.js';
import { liveProgress } from '../progress.js';
import { openSession } from '../session.js';
import { examples, localTime } from './with-run.js';

export interface RunListing {
  runId: string;
  status: string;
  startTime: string;
  closeTime: string | null;
  emulated: boolean;
  items: number | null;
  completed: number | null;
  failed: number | null;
  credits: number | null;
  /** The schedule that started the run, with its next firing (`pixelmill schedule`); null for a run by hand. */
  schedule: RunSchedule | null;
}

const RUN_QUERY = "WorkflowType = 'runWorkflow'";
/** Runs whose counts are looked up at once. */
const LOOKUPS_AT_ONCE = 8;

function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('expected a whole number from 1');
  return n;
}

async function counts(
  client: Client,
  info: WorkflowExecutionInfo,
): Promise<Pick<RunListing, 'items' | 'completed' | 'failed' | 'credits'>> {
  const attributes = info.typedSearchAttributes;
  const completed = attributes.get(COMPLETED_ATTRIBUTE);
  if (completed !== undefined && info.status.name !== 'RUNNING') {
    return {
      items: attributes.get(ITEMS_ATTRIBUTE) ?? null,
      completed,
      failed: attributes.get(FAILED_ATTRIBUTE) ?? null,
      credits: attributes.get(CREDITS_ATTRIBUTE) ?? null,
    };
  }
  try {
    if (info.status.name === 'COMPLETED') {
      const result = await runResultOf(client, info.workflowId, info.runId);
      return {
        items: finishedItems(result.counts),
        completed: result.counts.completed,
        failed: result.counts.failed,
        credits: result.creditsSpent,
      };
    }
    if (info.status.name === 'RUNNING') {
      const live = await liveProgress(client, info.workflowId, { deadlineMs: 3_000 });
      return {
        items: live.run.itemCount,
        completed: live.counts.completed,
        failed: live.counts.failed,
        credits: live.creditsSpent,
      };
    }
  } catch {
    // Unknown counts are shown as "-".
  }
  return { items: null, completed: null, failed: null, credits: null };
}

/** `where`: a visibility query the runs must also match, e.g. `PixelmillFailed > 0`. */
export async function listRuns(client: Client, limit: number, where?: string): Promise<RunListing[]> {
  const newest = new Map<string, WorkflowExecutionInfo>();
  const query = where ? `${RUN_QUERY} AND (${where})` : RUN_QUERY;
  // Visibility lists executions newest first; a --new-run leaves older ones under the same id.
  for await (const info of client.workflow.list({ query })) {
    if (!newest.has(info.workflowId)) newest.set(info.workflowId, info);
    if (newest.size >= limit) break;
  }
  const infos = [...newest.values()].sort((a, b) => b.startTime.getTime() - a.startTime.getTime());
  const listings: RunListing[] = [];
  // One look at each schedule, however many of its runs are listed.
  const schedules = new Map<unknown, Promise<RunSchedule | null>>();
  const scheduleOf = (memo: Record<string, unknown> | undefined) => {
    const name = memo?.schedule;
    if (!schedules.has(name)) schedules.set(name, scheduleOfRun(client, memo));
    return schedules.get(name)!;
  };
  for (let i = 0; i < infos.length; i += LOOKUPS_AT_ONCE) {
    const batch = infos.slice(i, i + LOOKUPS_AT_ONCE);
    const found = await Promise.all(batch.map((info) => counts(client, info)));
    const scheduled = await Promise.all(batch.map((info) => scheduleOf(info.memo)));
    batch.forEach((info, j) =>
      listings.push({
        runId: info.workflowId,
        status: info.status.name,
        startTime: info.startTime.toISOString(),
        closeTime: info.closeTime?.toISOString() ?? null,
        emulated: Boolean((info.memo as { emulated?: boolean } | undefined)?.emulated),
        ...found[j]!,
        schedule: scheduled[j] ?? null,
      }),
    );
  }
  return listings;
}

function table(listings: RunListing[], color: boolean): string {
  const c = picocolors.createColors(color);
  const show = (value: number | null): string =>
    value === null ? '-' : String(Math.round(value * 100) / 100);
  const rows = listings.map((run) => [
    run.runId + (run.emulated ? ' (emulated)' : ''),
    run.status.toLowerCase(),
    localTime(new Date(run.startTime)),
    show(run.items),
    show(run.completed),
    show(run.failed),
    show(run.credits),
  ]);
  const header = ['RUN', 'STATUS', 'STARTED', 'ITEMS', 'COMPLETED', 'FAILED', 'CREDITS'];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const pad = (cells: string[]): string[] =>
    cells.map((cell, column) =>
      column >= 3 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
    );
  const paint = (status: string): ((text: string) => string) =>
    status === 'completed' ? c.green : status === 'running' ? c.cyan : c.red;
  return [
    c.bold(pad(header).join('  ').trimEnd()),
    ...rows.map((row) =>
      pad(row)
        .map((cell, column) => (column === 1 ? paint(row[1]!)(cell) : cell))
        .join('  ')
        .trimEnd(),
    ),
    ...listings.flatMap((run) => (run.schedule ? [`${run.runId}: ${runScheduleText(run.schedule)}`] : [])),
  ].join('\n');
}

export function registerListCommand(program: Command): void {
  program
    .command('list')
    .description('list runs, newest first, with their status and counts')
    .option('--json', 'print a JSON array (fields documented in docs/cli.md)')
    .option('--limit <n>', 'show at most this many runs', positiveInt, 20)
    .option(
      '--query <where>',
      'only runs matching this visibility query, e.g. "PixelmillManifest = \'catalog\'"',
    )
    .addHelpText(
      'after',
      examples(
        'pixelmill list',
        'pixelmill list --limit 5',
        "pixelmill list --json | jq '.[] | select(.failed > 0)'",
        'pixelmill list --query "PixelmillManifest = \'catalog\' AND PixelmillFailed > 0"',
      ) +
        '\n\nRetries made by `pixelmill retry-failed` are listed as <run>/retry-N.' +
        '\n--query can name the Pixelmill* search attributes (on a cluster: `pixelmill setup` adds them).' +
        '\nExit codes: 0 listed (also when there are no runs), 1 error (e.g. Temporal unreachable).',
    )
    .action(async (options: { json?: boolean; limit: number; query?: string }) => {
      const session = await openSession();
      try {
        const listings = await listRuns(session.client, options.limit, options.query);
        if (options.json) process.stdout.write(`${JSON.stringify(listings, null, 2)}\n`);
        else if (listings.length === 0)
          process.stdout.write(`pixelmill: no runs on ${session.endpoint.display}\n`);
        else process.stdout.write(`${table(listings, colorEnabled(process.stdout))}\n`);
      } finally {
        await session.close();
      }
    });
}
