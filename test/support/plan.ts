// A manifest frozen into its run's store, as `pixelmill run` does before it starts a run: what a
// test hands a workflow or prepareRun instead of the manifest.
import type { RunStart } from '../../client/runs.js';
import type { PlanRef } from '../../common/types.js';
import { loadManifest } from '../../manifest/load.js';
import { RunStateRouter, type RunStateStore } from '../../runstate/index.js';

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
