// From a run's workflow to its files: the frozen plan and the per-item outcomes in the run's store
// (the output folder's `.pixelmill/`, or objects under an S3 output), and its report files.
// `report`, `retry-failed` and `status` read a finished run from here, without a worker: the
// workflow's memo names the manifest, its hash and the plan's store.
import { publishReferences } from '../references/publish.js';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Client, WorkflowExecutionStatusName } from '@temporalio/client';
import { RunStateRouter, stateDirOf, type IncrementalPlan, type LoadedPlan } from '../runstate/index.js';
import { isStorageError } from '../storage/errors.js';
import { isS3Url, s3UrlOf } from '../storage/s3-location.js';
import { errorMessage, isUserError, UserError } from '../common/errors.js';
import type { PlanRef, RunResult } from '../common/types.js';
import { loadManifest, type LoadedManifest } from '../manifest/load.js';
import { requireRun, runResultOf } from './runs.js';

export interface RunLocation {
  runId: string;
  /** Temporal's id of the execution (a `--new-run` makes another under the same runId). */
  execution: string;
  status: WorkflowExecutionStatusName;
  startTime: Date;
  closeTime?: Date;
  manifestFile: string;
  emulated: boolean;
  plan: PlanRef;
  outputDir: string;
  /** The workflow's result, when it completed. */
  result?: RunResult;
  /** The run's manifest, when this command has parsed it: a later locateRun need not parse it again. */
  manifest?: LoadedManifest;
}

interface RunMemo {
  manifestHash?: string;
  manifestFile?: string;
  /** Where the starter froze the plan; absent in runs started before plans moved to the store. */
  plan?: PlanRef;
  emulated?: boolean;
}

/** `manifest`: a manifest the command has parsed already; used when it is the run's file. */
export async function locateRun(
  client: Client,
  runId: string,
  manifest?: LoadedManifest,
): Promise<RunLocation> {
  const description = await requireRun(client, runId);
  const memo = (description.memo ?? {}) as RunMemo;
  if (!memo.manifestHash || !memo.manifestFile) {
    throw new UserError('run_unknown', `${runId} was not started by pixelmill (its memo names no manifest)`);
  }
  const status = description.status.name;
  const result = status === 'COMPLETED' ? await runResultOf(client, runId, description.runId) : undefined;
  let parsed = manifest?.settings.manifestFile === memo.manifestFile ? manifest : undefined;
  const outputDir =
    result?.stateDir && !isS3Url(result.stateDir)
      ? dirname(result.stateDir)
      : result && !isS3Url(result.reportFile)
        ? dirname(result.reportFile)
        : (parsed ??= manifestOfRun(runId, memo.manifestFile)).settings.outputDir;
  return {
    runId,
    execution: description.runId,
    status,
    startTime: description.startTime,
    ...(description.closeTime ? { closeTime: description.closeTime } : {}),
    manifestFile: memo.manifestFile,
    emulated: Boolean(memo.emulated),
    plan: memo.plan ?? { stateDir: stateDirOf(outputDir), planHash: memo.manifestHash },
    outputDir,
    ...(result ? { result } : {}),
    ...(parsed ? { manifest: parsed } : {}),
  };
}

/** A run that did not complete has no result naming its output: its manifest does. */
function manifestOfRun(runId: string, manifestFile: string): LoadedManifest {
  try {
    return loadManifest(manifestFile);
  } catch (error) {
    const why = isUserError(error) ? error.message : String(error);
    throw new UserError('run_files_unknown', `cannot find the output of ${runId}: ${why}`);
  }
}

/** Tries per S3 call in the CLI: nothing retries a command's own writes (the plan) for it. */
export const CLI_S3_ATTEMPTS = 4;

/**
 * The run state the CLI freezes plans into, reads and folds retries into: each run's own store.
 * Plans are immutable: one command reads each once.
 */
export const runState = new RunStateRouter({ planCacheSize: 1, s3: { maxAttempts: CLI_S3_ATTEMPTS } });

/**
 * Freezes `manifest` into its run's store (the output folder, or objects under an S3 output):
 * what workers read, wherever they run. A store that refuses is one line for the user.
 */
export async function freezePlan(
  manifest: LoadedManifest,
  incremental?: IncrementalPlan,
  say?: (line: string) => void,
): Promise<PlanRef> {
  try {
    const references = await publishReferences(manifest.settings, manifest.references, (output, options) =>
      runState.s3.objectsOf(output, options),
    );
    if (say && references.uploaded + references.present > 0) {
      say(
        `pixelmill: reference images: ${references.uploaded} put in the run's store, ${references.present} already there`,
      );
    }
    return (await runState.writePlan(manifest, incremental)).ref;
  } catch (error) {
    if (isStorageError(error))
      throw new UserError(error.code, `cannot write the run's plan: ${error.message}`);
    throw error;
  }
}

/** The run's frozen plan; a missing or foreign plan is the user's problem, in one line. */
export async function readPlan(plan: PlanRef): Promise<LoadedPlan> {
  try {
    return await runState.readPlan(plan);
  } catch (error) {
    throw new UserError('plan_missing', errorMessage(error));
  }
}

/** Where `retry-failed` keeps its records of a run: the CLI's own state folder of its output. */
export function retryRecordsDir(location: RunLocation): string {
  return stateDirOf(location.outputDir);
}

/** Where a run's report file `name` is: beside its images, in its folder or its S3 output. */
export function runFileLocation(location: RunLocation, name: string): string {
  const store = location.plan.objectStore;
  return store ? `${s3UrlOf(store)}/${name}` : join(location.outputDir, name);
}

/** The text of a run's report file `name` (summary.json, ...), or undefined when there is none. */
export async function readRunFile(location: RunLocation, name: string): Promise<string | undefined> {
  const store = location.plan.objectStore;
  if (store) return runState.s3.objectsOf(store, { under: '' }).read(name);
  try {
    return await readFile(join(location.outputDir, name), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
