// What `pause`, `resume`, `cancel` and `status` need beyond a signal: whether a worker serves the
// run (the pollers of its workflow task queue), the requests it has not taken yet (signals after
// its last completed workflow task), the command that would serve it, and `cancel --force`:
// terminating a stuck run together with its shards.
import { isAbsolute, relative } from 'node:path';
import {
  isGrpcServiceError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { API_BASE_URL_ENV, FALLBACK_API_KEY_ENV } from '../activities/api-clients.js';
import { cancelSignal, pauseSignal, resumeSignal } from '../common/names.js';
import type { RunInput } from '../common/types.js';
import { originalRunId } from './retries.js';
import { TASK_QUEUE_TYPE_WORKFLOW, timestampMs, workersPolling } from '../temporal/task-queues.js';

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

/** gRPC's UNIMPLEMENTED: a server or proxy without the reverse history call. */
const UNIMPLEMENTED = 12;

export type ControlRequest = 'pause' | 'resume' | 'cancel';

const REQUESTS = new Map<string, ControlRequest>([
  [pauseSignal.name, 'pause'],
  [resumeSignal.name, 'resume'],
  [cancelSignal.name, 'cancel'],
]);

export interface PendingRequest {
  signal: ControlRequest;
  /** When the server received it (ISO 8601). */
  sentAt: string;
}

/** What the run's memo says about it (client/runs.ts writes it at start). */
interface RunMemo {
  manifestFile?: string;
  emulated?: boolean;
  apiBaseUrl?: string;
}

/** Worker processes that polled the run's workflow task queue lately: 0 means nothing moves the run. */
export async function workersServing(
  client: Client,
  description: WorkflowExecutionDescription,
  nowMs = Date.now(),
): Promise<number> {
  return workersPolling(
    client.workflowService,
    client.options.namespace,
    description.taskQueue,
    TASK_QUEUE_TYPE_WORKFLOW,
    nowMs,
  );
}

/** The run's history, newest event first; forwards (and reversed here) where the server lacks that call. */
async function* newestFirst(client: Client, description: WorkflowExecutionDescription) {
  const execution = { workflowId: description.workflowId, runId: description.runId };
  let nextPageToken: Uint8Array | undefined;
  try {
    do {
      const page = await client.workflowService.getWorkflowExecutionHistoryReverse({
        namespace: client.options.namespace,
        execution,
        maximumPageSize: 100,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      yield* (page.history?.events ?? []) as HistoryEvent[];
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
  } catch (error) {
    if (!isGrpcServiceError(error) || error.code !== UNIMPLEMENTED || nextPageToken) throw error;
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    yield* ((history.events ?? []) as HistoryEvent[]).reverse();
  }
}

/**
 * The pause, resume and cancel requests the run has not taken yet, oldest first: the signals
 * recorded after its last completed workflow task. (Signals that arrive while a workflow task
 * runs are written after it completes, so every one before it has been handled.)
 */
export async function pendingRequests(
  client: Client,
  description: WorkflowExecutionDescription,
): Promise<PendingRequest[]> {
  const pending: PendingRequest[] = [];
  for await (const event of newestFirst(client, description)) {
    if (event.workflowTaskCompletedEventAttributes) break;
    const request = REQUESTS.get(event.workflowExecutionSignaledEventAttributes?.signalName ?? '');
    if (request)
      pending.push({ signal: request, sentAt: new Date(timestampMs(event.eventTime) ?? 0).toISOString() });
  }
  return pending.reverse();
}

function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The manifest as the user would type it: relative to here when it is below here. */
function manifestArgument(file: string): string {
  const near = relative(process.cwd(), file);
  return shellWord(near && !near.startsWith('..') && !isAbsolute(near) ? near : file);
}

/**
 * The command that starts a worker for the run. Embedded, the run's workers live in the command
 * that ran it (`run`, or `retry-failed` for a retry); with a cluster, `pixelmill worker` with the
 * run's API (the key is the user's to fill in). An emulated run has only the embedded emulator.
 */
export function serveCommand(
  mode: 'embedded' | 'external',
  runId: string,
  description: WorkflowExecutionDescription,
) {
  const memo = (description.memo ?? {}) as RunMemo;
  const original = originalRunId(runId);
  if (mode === 'embedded' || memo.emulated) {
    if (original !== runId) return `pixelmill retry-failed ${shellWord(original)}`;
    const manifest = memo.manifestFile ? manifestArgument(memo.manifestFile) : 'MANIFEST';
    const api =
      !memo.emulated && memo.apiBaseUrl
        ? `${API_BASE_URL_ENV}=${shellWord(memo.apiBaseUrl)} ${FALLBACK_API_KEY_ENV}=... `
        : '';
    return `${api}pixelmill run ${manifest}`;
  }
  const api = memo.apiBaseUrl
    ? `${API_BASE_URL_ENV}=${shellWord(memo.apiBaseUrl)} ${FALLBACK_API_KEY_ENV}=... `
    : '';
  return `${api}pixelmill worker`;
}

/** A shard the run started: its id and first execution (shards continue as new). */
export interface ChildRef {
  workflowId: string;
  firstRunId?: string;
}

/** One execution of a run, and how it stands. */
export interface RunExecution {
  workflowId: string;
  runId: string;
  status: string;
}

export function executionOf(description: WorkflowExecutionDescription): RunExecution {
  const { workflowId, runId } = description;
  return { workflowId, runId, status: description.status.name };
}

/**
 * The run's shards that had not closed when its history ended: those an earlier execution handed
 * on (its continue-as-new input) and the children this one started.
 */
async function openChildren(client: Client, execution: RunExecution): Promise<ChildRef[]> {
  const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
  const events = (history.events ?? []) as HistoryEvent[];
  const open = new Map<string, ChildRef>();
  const [input] = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
  const carried = input
    ? client.options.loadedDataConverter.payloadConverter.fromPayload<RunInput>(input)
    : undefined;
  for (const { workflowId } of carried?.carried?.running ?? []) open.set(workflowId, { workflowId });
  for (const event of events) {
    const initiated = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    if (initiated) open.set(initiated, { workflowId: initiated });
    const started = event.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
    if (started?.workflowId) {
      open.set(started.workflowId, {
        workflowId: started.workflowId,
        ...(started.runId ? { firstRunId: started.runId } : {}),
      });
    }
    const closed =
      event.startChildWorkflowExecutionFailedEventAttributes?.workflowId ??
      (
        event.childWorkflowExecutionCompletedEventAttributes ??
        event.childWorkflowExecutionFailedEventAttributes ??
        event.childWorkflowExecutionCanceledEventAttributes ??
        event.childWorkflowExecutionTimedOutEventAttributes ??
        event.childWorkflowExecutionTerminatedEventAttributes
      )?.workflowExecution?.workflowId;
    if (closed) open.delete(closed);
  }
  return [...open.values()];
}

/**
 * The run's shards still running. Shards outlive the run's executions (they start with
 * ParentClosePolicy.ABANDON, for continue-as-new), so a run that was terminated, not cancelled,
 * can leave some: they stop submitting on their own (workflows/run-check.ts), then store what
 * was in flight before they end.
 */
export async function runningShards(client: Client, run: RunExecution): Promise<ChildRef[]> {
  // A run completes only once every shard has told it its end: none to look for.
  if (run.status === 'COMPLETED') return [];
  const running: ChildRef[] = [];
  for (const child of await openChildren(client, run)) {
    try {
      if ((await shardHandle(client, child).describe()).status.name === 'RUNNING') running.push(child);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
  return running;
}

function shardHandle(client: Client, child: ChildRef) {
  return client.workflow.getHandle(
    child.workflowId,
    undefined,
    child.firstRunId ? { firstExecutionRunId: child.firstRunId } : {},
  );
}

/**
 * Terminates the run, unless it has ended, then the shards it had running (`shards`, when the
 * caller has listed them already): shards outlive the run's executions, and nothing else would
 * end them. The run goes first: terminated shards would otherwise fail a run that a worker still
 * serves. Returns the ids of the shards terminated.
 */
export async function terminateRun(
  client: Client,
  description: WorkflowExecutionDescription,
  reason: string,
  shards?: readonly ChildRef[],
): Promise<string[]> {
  if (description.status.name === 'RUNNING') {
    try {
      await client.workflow.getHandle(description.workflowId, description.runId).terminate(reason);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error; // it ended meanwhile: its shards still go
    }
  }
  const terminated: string[] = [];
  for (const child of shards ?? (await openChildren(client, executionOf(description)))) {
    try {
      await shardHandle(client, child).terminate(reason);
      terminated.push(child.workflowId);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error; // closed meanwhile
    }
  }
  return terminated;
}
