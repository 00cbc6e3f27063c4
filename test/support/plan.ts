// A manifest frozen into its run's store, as `pixelmill run` does before it starts a run: what a
// test hands a workflow or prepareRun instead of the manifest; and the outcome lines a run appends.
import type { RunStart } from '../../client/runs.js';
import type { PlanRef } from '../../common/types.js';
import { loadManifest } from '../../manifest/load.js';
import { RunStateRouter, type OutcomeLine, type RunStateStore } from '../../runstate/index.js';

export async function frozenPlan(
  manifestFile: string,
  runState: RunStateStore = new RunStateRouter(),
): Promise<PlanRef> {
  return (await runState.writePlan(loadManifest(manifestFile))).ref;
}

/** What `startOrAttach` takes to start the run of `manifestFile` with `input`. */
export function runStart(manifestFile: string, input: RunStart['input']): RunStart {
  return { manifestFile, input, freezePlan: () => frozenPlan(manifestFile) };
}

/** The outcome line of item `item-<index>` whose task `taskId` ended `status`, with no images. */
export function outcomeLine(
  index: number,
  taskId: string,
  status: OutcomeLine['status'] = 'completed',
): OutcomeLine {
  return {
    index,
    id: `item-${index}`,
    status,
    task_id: taskId,
    attempts: 1,
    credits_cost: 1,
    images: [],
    error: null,
  };
}
