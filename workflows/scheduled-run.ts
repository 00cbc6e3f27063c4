// One firing of a pixelmill schedule (client/schedules.ts): read the manifest as it is now, plan
// its incremental run, and run it as the catalog's run workflow.
import {
  ApplicationFailure,
  ActivityFailure,
  ParentClosePolicy,
  proxyActivities,
  setCurrentDetails,
  startChild,
  WorkflowIdReusePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { prepareFiringActivity } from '../activities/manifest-source.js';
import { taskQueuesOf } from '../common/names.js';
import {
  runMemo,
  runStaticDetails,
  type ScheduledRunInput,
  type ScheduledRunResult,
} from '../common/schedules.js';
import { MANIFEST_ATTRIBUTE } from '../common/search-attributes.js';
import type { RunInput, RunResult } from '../common/types.js';
import { RunNotifier } from './run-notify.js';

type PrepareFiring = ReturnType<typeof prepareFiringActivity>;

/**
 * A scheduled run. Durable because it holds only the manifest's location: its first activity reads
 * and plans the manifest at that moment, as `pixelmill run` does on an edited one (new and changed
 * items only; nothing at all when nothing changed), and the run itself is the catalog's own run
 * workflow (`pixelmill/<name>`), a child, so that its status, report, UI and catalog index are a
 * run's like any other. The schedule's overlap policy (SKIP) holds while this workflow waits for
 * its run: a firing while the last one still runs is skipped. A manifest that cannot be read or is
 * invalid fails the firing with its reason, before anything is written to the output.
 */
export async function scheduledRunWorkflow(input: ScheduledRunInput): Promise<ScheduledRunResult> {
  const queues = taskQueuesOf(input.api.account);
  const { prepareFiring } = proxyActivities<{ prepareFiring: PrepareFiring }>({
    taskQueue: queues.workflow,
    // A catalog of 100,000 items is planned in under a minute; its plan written to a bucket in a few.
    startToCloseTimeout: '30 minutes',
    // A store that is down gets a few minutes; an invalid manifest fails at once (nonRetryable).
    retry: { initialInterval: '5 seconds', backoffCoefficient: 3, maximumAttempts: 4 },
  });
  let prepared;
  try {
    prepared = await prepareFiring.executeWithOptions(
      { summary: `read ${input.manifest} and plan its run` },
      [
        {
          manifest: input.manifest,
          schedule: input.schedule,
          api: input.api,
          ...(input.prune ? { prune: true } : {}),
        },
      ],
    );
  } catch (error) {
    const reason = error instanceof ActivityFailure && error.cause ? error.cause.message : String(error);
    if (input.notify?.length) {
      // The firing is what failed: its workflow is the one the Temporal UI link shows.
      await new RunNotifier(input.notify, queues.workflow).send(['failed'], {
        runId: workflowInfo().workflowId,
        name: input.schedule,
        schedule: input.schedule,
        outcome: `the firing could not start a run: ${reason}`,
        reason,
      });
    }
    throw ApplicationFailure.create({ type: 'ManifestUnusableError', message: reason, nonRetryable: true });
  }
  if ('unchanged' in prepared) {
    setCurrentDetails(`No run: ${prepared.unchanged}.`);
    return { runId: prepared.runId, outcome: prepared.unchanged, started: false };
  }
  const { runId, name, manifestFile } = prepared;
  setCurrentDetails(`Running ${runId}: ${prepared.plan}`);
  let run;
  try {
    run = await startChild<(input: RunInput) => Promise<RunResult>>('runWorkflow', {
      workflowId: runId,
      taskQueue: queues.workflow,
      args: [prepared.input],
      // The run is the catalog's: it goes on if this firing is terminated, as a run by hand would.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      memo: runMemo(prepared.input, manifestFile, input.schedule),
      staticSummary: `pixelmill run of ${manifestFile}, by schedule ${input.schedule}`,
      staticDetails: runStaticDetails(prepared.input, manifestFile, input.schedule),
      ...(input.indexed ? { typedSearchAttributes: [{ key: MANIFEST_ATTRIBUTE, value: name }] } : {}),
    });
  } catch (error) {
    // A run of the catalog started by hand is still going: it is the run.
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    const outcome = `skipped: ${runId} is still running`;
    setCurrentDetails(`No run: ${outcome}.`);
    return { runId, outcome, started: false };
  }
  const result = await run.result();
  const outcome = result.outcome ?? `${runId} finished`;
  setCurrentDetails(`${runId}: ${outcome}`);
  return { runId, outcome, started: true };
}
