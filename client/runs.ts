// Finding, starting and attaching to runs. A run's workflow id comes from its manifest's name, so
// running the same manifest again attaches to the run that exists (live or finished) instead of
// submitting anything twice; `--new-run` starts over.
import { existsSync } from 'node:fs';
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { UserError } from '../common/errors.js';
import { plural } from '../common/words.js';
import { executionOf, runningShards, type RunExecution } from './run-control.js';
import { RUN_WORKFLOW_PREFIX, runWorkflowId, taskQueuesOf } from '../common/names.js';
import { MANIFEST_ATTRIBUTE, PIXELMILL_SEARCH_ATTRIBUTES } from '../common/search-attributes.js';
import type { PlanRef, RunInput, RunResult } from '../common/types.js';
import { normalizeCounts } from '../common/item-counts.js';
import { loadManifest, type LoadedManifest } from '../manifest/load.js';
import { ensureSearchAttributes } from '../temporal/server-admin.js';
import { isS3Url } from '../storage/s3-location.js';
import { runMemo, runStaticDetails } from '../common/schedules.js';

export type RunHandle = WorkflowHandle<(input: RunInput) => Promise<RunResult>>;

/** A finished run's result, its counts in today's vocabulary whatever version recorded them. */
export async function runResultOf(client: Client, runId: string, executionId?: string): Promise<RunResult> {
  const handle: RunHandle = client.workflow.getHandle(runId, executionId);
  return withCurrentCounts(await handle.result());
}

export function withCurrentCounts(result: RunResult): RunResult {
  return { ...result, counts: normalizeCounts(result.counts) };
}

/** RUN on the command line, resolved. */
export interface RunArgument {
  runId: string;
  /** The manifest, when RUN named its file: parsed once, and handed on to whatever needs it. */
  manifest?: LoadedManifest;
}

/** RUN on the command line: a manifest file, a run id (`pixelmill/<name>`), or a manifest name. */
export function resolveRun(run: string): RunArgument {
  if (isS3Url(run)) {
    throw new UserError(
      'run_argument_invalid',
      `${run}: name the run by its id (pixelmill/<name>) or its manifest's name; only run and schedule create read a manifest from a bucket`,
    );
  }
  if (/\.ya?ml$/i.test(run) || existsSync(run)) {
    const manifest = loadManifest(run);
    return { runId: runWorkflowId(manifest.settings.name), manifest };
  }
  return { runId: run.startsWith(RUN_WORKFLOW_PREFIX) ? run : runWorkflowId(run) };
}

export async function describeRun(client: Client, runId: string) {
  try {
    return await client.workflow.getHandle(runId).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}

export async function requireRun(client: Client, runId: string) {
  const description = await describeRun(client, runId);
  if (!description)
    throw new UserError('run_not_found', `no run ${runId} on this Temporal (see \`pixelmill list\`)`);
  return description;
}

export interface StartOutcome {
  handle: RunHandle;
  /** `started` a new run, attached to a `running` one, or found a `finished` one. */
  how: 'started' | 'running' | 'finished';
  /** The existing run was made from a different manifest version. */
  manifestChanged: boolean;
  /** Why a run started here has no search attributes (the cluster lacks them and would not add them). */
  unindexed?: string;
}

/**
 * Registers pixelmill's search attributes if they are missing and this client may (a dev server,
 * an admin on a self-hosted cluster). Where it may not, the run goes without: a workflow that
 * upserts unregistered attributes fails its workflow tasks.
 */
export async function indexable(client: Client): Promise<string | undefined> {
  try {
    await ensureSearchAttributes(client.connection, client.options.namespace, PIXELMILL_SEARCH_ATTRIBUTES);
    return undefined;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return `search attributes are not registered and could not be (${reason}); the run will not be searchable by them`;
  }
}

/**
 * A run's API belongs to the run: a command configured for another API (another base URL or key,
 * or the emulator instead of a real service) must not attach to it, since its workers would not
 * serve the run and the run would not be served as the user expects.
 */
function refuseOtherApi(
  runId: string,
  memo: Record<string, unknown> | undefined,
  input: RunStart['input'],
): void {
  const account = memo?.apiAccount;
  if (typeof account !== 'string' || account === input.apiAccount) return;
  const needed =
    memo?.emulated === true ? 'the built-in emulator' : String(memo?.apiBaseUrl ?? 'another API');
  const here = input.emulated ? 'the built-in emulator' : (input.apiBaseUrl ?? 'another API');
  throw new UserError(
    'run_api_differs',
    `${runId} runs against ${needed} (account ${account}), but this command is set up for ${here} ` +
      `(account ${input.apiAccount ?? 'none'}): run it with that API's PIXELMILL_API_BASE_URL and key`,
  );
}

/** What starting a run takes: its input but the plan, which is frozen only when it starts. */
export interface RunStart {
  /** The manifest file, for the run's memo and summary: the starter's, never read by workers. */
  manifestFile: string;
  input: Omit<RunInput, 'plan'>;
  /** Freezes the manifest into the run's store (runstate/), once a run is to be started. */
  freezePlan: () => Promise<PlanRef>;
  /**
   * Start a new execution although a finished one exists: an incremental run of an edited
   * manifest (a live run is still attached to).
   */
  again?: boolean;
}

export async function startOrAttach(
  client: Client,
  runId: string,
  start: RunStart,
  newRun: boolean,
): Promise<StartOutcome> {
  const { input, manifestFile } = start;
  const existing = await describeRun(client, runId);
  const manifestChanged = existing !== undefined && existing.memo?.manifestHash !== input.manifestHash;
  if (existing?.status.name === 'RUNNING') refuseOtherApi(runId, existing.memo, input);
  if (existing?.status.name === 'RUNNING') {
    if (newRun) {
      throw new UserError(
        'run_in_progress',
        `${runId} is still running: cancel it (\`pixelmill cancel ${runId}\`) before --new-run`,
      );
    }
    return { handle: client.workflow.getHandle(runId), how: 'running', manifestChanged };
  }
  if (existing && !newRun && !start.again)
    return { handle: client.workflow.getHandle(runId), how: 'finished', manifestChanged };
  if (existing) await refuseOverRunningShards(client, executionOf(existing));
  const unindexed = await indexable(client);
  const manifestName = runId.startsWith(RUN_WORKFLOW_PREFIX)
    ? runId.slice(RUN_WORKFLOW_PREFIX.length)
    : runId;
  const plan = await start.freezePlan();
  const handle = await client.workflow.start<(input: RunInput) => Promise<RunResult>>('runWorkflow', {
    workflowId: runId,
    taskQueue: taskQueuesOf(input.apiAccount).workflow,
    args: [{ ...input, plan }],
    // Two CLIs starting the same manifest at once end up on one run.
    workflowIdConflictPolicy: 'USE_EXISTING',
    memo: runMemo({ ...input, plan }, manifestFile),
    staticSummary: `pixelmill run of ${manifestFile}`,
    staticDetails: runStaticDetails({ ...input, plan }, manifestFile),
    // The run passes it on to its shards; it is their cue that the attributes exist.
    ...(unindexed ? {} : { typedSearchAttributes: [{ key: MANIFEST_ATTRIBUTE, value: manifestName }] }),
  });
  return { handle, how: 'started', manifestChanged: false, ...(unindexed ? { unindexed } : {}) };
}

/**
 * Refuses to run an ended run's items again while shards it started still run (a run terminated
 * from the Temporal UI): a new execution would start shards under their ids, and a retry would
 * store images where they still store theirs. They end on their own (workflows/run-check.ts).
 */
export async function refuseOverRunningShards(client: Client, ended: RunExecution): Promise<void> {
  const left = await runningShards(client, ended);
  if (left.length === 0) return;
  const runId = ended.workflowId;
  throw new UserError(
    'shards_running',
    `${runId} ended (${ended.status.toLowerCase()}) with ${plural(left.length, 'shard')} still running: ` +
      `run it again once they have ended, or end them now with \`pixelmill cancel ${runId} --force\``,
  );
}

/**
 * Exit codes of `run`, `watch` and `retry-failed`: 0 all completed, 4 the deadline ended the run
 * with items unfinished (`retry-failed` continues them), 3 finished with items not completed.
 */
export function exitCodeOf(result: Pick<RunResult, 'counts' | 'endedByDeadline'>): number {
  if ((result.endedByDeadline ?? 0) > 0) return 4;
  const { failed, cancelled, expired, skipped } = result.counts;
  return failed + cancelled + expired + skipped === 0 ? 0 : 3;
}
