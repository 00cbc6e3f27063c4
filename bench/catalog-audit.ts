// What a finished catalog run is audited against: its report.jsonl and summary.json, the
// emulator's ground truth (every task it acknowledged), the bytes the result host serves, and the
// workflow histories of the run and its shards across continue-as-new.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { request } from 'undici';
import type { ReportLine } from '../report/report-line.js';
import { shardWorkflowId } from '../common/names.js';
import type { EmulatorStats, RunningEmulator } from '../emulator/index.js';
import type { GroundTruthTask } from '../emulator/apimart/routes/admin.js';

/** A run's output folder (a test's Catalog, a benchmark's run). */
export interface RunOutput {
  outputDir: string;
}

export function readReport(catalog: RunOutput): ReportLine[] {
  return parseReport(readFileSync(join(catalog.outputDir, 'report.jsonl'), 'utf8'));
}

/** The lines of a report.jsonl's text (read from a bucket, say). */
export function parseReport(text: string): ReportLine[] {
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ReportLine);
}

export interface Summary {
  manifest: string;
  run_id: string;
  items: number;
  counts: Record<ReportLine['status'], number>;
  images: number;
  credits_charged: number;
  tasks_given_up: number;
  /** Absent in outputs written before the checks. */
  checks?: { tasks_regenerated: number };
  api_calls: { submit: number; lookup: number; get: number };
  emulated: boolean;
}

export function readSummary(catalog: RunOutput): Summary {
  return JSON.parse(readFileSync(join(catalog.outputDir, 'summary.json'), 'utf8')) as Summary;
}

/** The JSON lines an emulator admin route streams (`/_emulator/tasks`, `/_emulator/requests`). */
export async function emulatorLines<T>(emulator: RunningEmulator, route: 'tasks' | 'requests'): Promise<T[]> {
  const response = await request(`${emulator.url}/_emulator/${route}`);
  const text = await response.body.text();
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as T);
}

/** Every task the emulator ever acknowledged (`GET /_emulator/tasks`). */
export function groundTruth(emulator: RunningEmulator): Promise<GroundTruthTask[]> {
  return emulatorLines<GroundTruthTask>(emulator, 'tasks');
}

/** How many tasks were created per prompt. */
export function submissionsByPrompt(tasks: readonly GroundTruthTask[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const task of tasks) counts.set(task.prompt, (counts.get(task.prompt) ?? 0) + 1);
  return counts;
}

export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The sha256 of what the result host serves at `url` now, downloaded independently. */
export async function servedSha256(url: string): Promise<string> {
  const response = await request(url);
  const body = Buffer.from(await response.body.arrayBuffer());
  if (response.statusCode !== 200) throw new Error(`GET ${url} answered ${response.statusCode}`);
  return sha256(body);
}

export { mapLimit } from '../common/map-limit.js';

export interface HistoryRecord {
  workflowId: string;
  runId: string;
  /** The history as `fetchHistory()` returns it. */
  history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
}

/** Every run of a workflow id, oldest first, following continue-as-new back from the latest. */
export async function historyChain(client: Client, workflowId: string): Promise<HistoryRecord[]> {
  const chain: HistoryRecord[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    chain.unshift({ workflowId, runId, history });
    runId =
      history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
  }
  return chain;
}

/** The histories of a run and of all its shards (every continue-as-new run of each). */
export async function runHistories(client: Client, runId: string, shardCount: number) {
  const records = await historyChain(client, runId);
  for (let shard = 0; shard < shardCount; shard++)
    records.push(...(await historyChain(client, shardWorkflowId(runId, shard))));
  return records;
}

/** Images downloaded successfully from the result host so far (the emulator's counter). */
export function downloadsServed(emulator: RunningEmulator): number {
  return emulator.stats().requests['GET /results/{task_id}/{index}.png']?.['200'] ?? 0;
}

/** API calls by kind, and result downloads, from the emulator's request counts. */
export function apiCallCounts(stats: EmulatorStats): {
  submit: number;
  lookup: number;
  get: number;
  downloads: number;
} {
  const total = (route: string): number =>
    Object.values(stats.requests[route] ?? {}).reduce((sum, count) => sum + count, 0);
  return {
    submit: total('POST /v1/images/generations'),
    lookup: total('POST /v1/tasks/batch'),
    get: total('GET /v1/tasks/{id}'),
    downloads: total('GET /results/{task_id}/{index}.png'),
  };
}

/** Arrival times (emulator clock, ms) of every API call (`/v1/...`), from `/_emulator/requests`. */
export async function apiCallTimes(emulator: RunningEmulator): Promise<number[]> {
  const entries = await emulatorLines<{ t_ms: number; route: string }>(emulator, 'requests');
  return entries
    .filter((entry) => entry.route.includes('/v1/'))
    .map((entry) => entry.t_ms)
    .sort((a, b) => a - b);
}

/** The most calls in any window of `windowMs` (sliding, half-open), given sorted times. */
export function busiestWindow(times: readonly number[], windowMs = 1000): number {
  let most = 0;
  let first = 0;
  for (let last = 0; last < times.length; last += 1) {
    while (times[last]! - times[first]! >= windowMs) first += 1;
    most = Math.max(most, last - first + 1);
  }
  return most;
}
