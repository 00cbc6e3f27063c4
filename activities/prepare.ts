// prepareRun: freezes the manifest into the run's plan files and answers the settings the run
// workflow keeps in its state; planShard: a shard's expected credits, read from the plan. The manifest is re-read and must still have the hash the run was
// started with: a run never mixes two versions of a catalog.
import { ApplicationFailure } from '@temporalio/activity';
import { isUserError } from '../common/errors.js';
import { FailureType } from '../common/failure-types.js';
import { SHARD_SIZE } from '../common/names.js';
import type { PlanShardInput, PlanShardOutput, PreparedRun, PrepareRunInput } from '../common/types.js';
import { loadManifest, type LoadedManifest } from '../manifest/load.js';
import { DEFAULTS } from '../manifest/normalize.js';
import type { ResolvedDeps } from './deps.js';
import { toActivityFailure } from './failures.js';
import { estimatedCredits, type PlanMeta, type RunStateStore } from '../runstate/index.js';

/** Problems of an invalid manifest shown in the failure message; the rest go to details. */
const PROBLEMS_IN_MESSAGE = 3;

function load(manifestFile: string): LoadedManifest {
  try {
    return loadManifest(manifestFile);
  } catch (error) {
    if (!isUserError(error)) throw error;
    const shown = error.problems.slice(0, PROBLEMS_IN_MESSAGE).join('; ');
    const more = error.problems.length > PROBLEMS_IN_MESSAGE ? '; ...' : '';
    throw ApplicationFailure.create({
      type: FailureType.ManifestInvalid,
      message: shown === '' ? error.message : `${error.message}: ${shown}${more}`,
      nonRetryable: true,
      details: [{ code: error.code, problems: error.problems }],
    });
  }
}

/**
 * Freezes the manifest into a plan, and checks an S3 output's bucket and credentials, so that a
 * run fails at once rather than at its first image.
 */
export function prepareRunActivity(deps: Pick<ResolvedDeps, 'resultStore' | 'runState'>) {
  const { resultStore, runState } = deps;
  return async function prepareRun(input: PrepareRunInput): Promise<PreparedRun> {
    const prepared = await preparePlan(runState, input);
    if (prepared.meta.objectStore) {
      await resultStore(prepared.meta.outputDir, prepared.meta.objectStore)
        .check?.()
        .catch((error: unknown) => {
          throw toActivityFailure(error);
        });
    }
    return prepared.run;
  };
}

async function preparePlan(
  runState: RunStateStore,
  input: PrepareRunInput,
): Promise<{ run: PreparedRun; meta: PlanMeta }> {
  const manifest = load(input.manifestFile);
  if (manifest.hash !== input.manifestHash) {
    throw ApplicationFailure.create({
      type: FailureType.ManifestChanged,
      message: 'the manifest changed since this run started; run it with --new-run to start over',
      nonRetryable: true,
    });
  }
  const { ref, meta } = await runState.writePlan(manifest);
  const shardCredits: number[] = [];
  manifest.items.forEach((item, index) => {
    const shard = Math.floor(index / SHARD_SIZE);
    shardCredits[shard] = (shardCredits[shard] ?? 0) + estimatedCredits(item, meta.creditsPerImage);
  });
  const prepared: PreparedRun = {
    plan: ref,
    name: meta.name,
    itemCount: meta.itemCount,
    imageCount: meta.imageCount,
    outputDir: meta.outputDir,
    requestsPerSecond: meta.requestsPerSecond,
    maxInFlight: meta.maxInFlight,
    creditsPerImage: meta.creditsPerImage,
    retry: meta.retry,
    // Plans written before task timeouts existed have none: the default then.
    taskTimeoutMs: meta.taskTimeoutMs ?? DEFAULTS.taskTimeoutMs,
    shardCredits,
  };
  if (meta.budgetCredits !== undefined) prepared.budgetCredits = meta.budgetCredits;
  if (meta.rateCaps !== undefined) prepared.rateCaps = meta.rateCaps;
  if (meta.deadline !== undefined) prepared.deadline = meta.deadline;
  return { run: prepared, meta };
}

/** planShard: the expected credits of each item of a shard, for its budget checks. */
export function planShardActivity(runState: RunStateStore) {
  return async function planShard(input: PlanShardInput): Promise<PlanShardOutput> {
    const { meta, items } = await runState.readPlanItems(input.plan, input);
    return { credits: items.map((item) => estimatedCredits(item, meta.creditsPerImage)) };
  };
}
