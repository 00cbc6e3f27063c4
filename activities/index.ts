// Public entry of the activities: `createActivities(deps)` builds every activity of a run around
// shared per-worker state (the run state store and its plan cache, API client pools), for the
// worker to register. Workflows
// import the `Activities` type only and call them through proxyActivities.
import { ApiEvidence } from './api-evidence.js';
import { DEFAULT_WEBHOOK_SECRET_ENV } from '../webhook/config.js';
import type { PlanMeta } from '../runstate/index.js';
import { ApiClients } from './api-clients.js';
import { apiCallActivities } from './api-calls.js';
import { resolveDeps, type ActivityDeps, type ResolvedDeps } from './deps.js';
import { planShardActivity, prepareRunActivity } from './prepare.js';
import { applyGroupRates, configureRateLimit, joinRateGovernor } from './rate-limit.js';
import { RateGate } from './rate-gate.js';
import { recordOutcomesActivity } from './record-outcomes.js';
import { writeReportActivity } from './report.js';
import { keptAlive } from './context.js';
import { toActivityFailure } from './failures.js';
import { storeResultsActivity } from './store-results.js';
import { collectResultsActivity } from './collect-results.js';
import { submitSliceActivity } from './submit-slice.js';
import { StatusFollowers } from './status-followers.js';
import { carryOverActivity } from './carry-over.js';
import { prepareFiringActivity } from './manifest-source.js';
import { notifyActivities } from './notify.js';
import { openaiBatchActivities } from './openai-batch.js';
import { openaiBatchCollectActivity } from './openai-batch-collect.js';
import { openaiGenerateActivity } from './openai-generate.js';

export type { ActivityDeps } from './deps.js';
export { toActivityFailure } from './failures.js';
export { NOT_RUN, REPORT_FILE, SUMMARY_FILE, type ReportLine } from '../report/report-line.js';
export { RESULT_EXPIRED } from './store-results.js';

export interface ActivityRuntime {
  activities: ReturnType<typeof buildActivities>;
  /** Closes the API clients' connection pools (on worker shutdown, after the worker stopped). */
  close(): Promise<void>;
}

/**
 * What its run's store threw (a refused credential, a missing bucket) turned into the failure
 * Temporal acts on (failures.ts): run state lives in an object store for S3 outputs, so any
 * activity may meet one.
 */
function failuresMapped<I, O>(fn: (input: I) => Promise<O>): (input: I) => Promise<O> {
  return (input) =>
    fn(input).catch((error: unknown) => {
      throw toActivityFailure(error);
    });
}

/** Kept alive by heartbeats while it runs (context.ts), its failures mapped. */
const activity = <I, O>(fn: (input: I) => Promise<O>) => failuresMapped(keptAlive(fn));

function buildActivities(
  resolved: ResolvedDeps,
  clients: ApiClients,
  gate: RateGate,
  followers: StatusFollowers,
) {
  const { runState } = resolved;
  const evidence = new ApiEvidence(resolved.now);
  const api = {
    runState,
    clients,
    gate,
    evidence,
    followers,
    references: resolved.references,
    webhookSecret: (meta: PlanMeta) =>
      resolved.webhookSecret ?? resolved.env[meta.webhooks?.secretEnv ?? DEFAULT_WEBHOOK_SECRET_ENV],
  };
  const { submitItem, lookupTasks, fetchTask, cancelTasks } = apiCallActivities(api);
  return {
    prepareRun: activity(prepareRunActivity(resolved)),
    planShard: activity(planShardActivity(runState)),
    submitItem: activity(submitItem),
    submitSlice: activity(submitSliceActivity(api)),
    lookupTasks: activity(lookupTasks),
    fetchTask: activity(fetchTask),
    cancelTasks: activity(cancelTasks),
    // It beats with its progress itself.
    storeResults: failuresMapped(storeResultsActivity({ clients, resolved })),
    collectResults: failuresMapped(collectResultsActivity({ clients, resolved, api: { gate, evidence } })),
    carryOver: failuresMapped(carryOverActivity({ clients, resolved })),
    ...batchActivities(resolved, clients, gate),
    recordOutcomes: activity(recordOutcomesActivity(runState)),
    writeReport: activity(
      writeReportActivity({ runState, now: resolved.now, resultStore: resolved.resultStore }),
    ),
    configureRateLimit: activity(configureRateLimit),
    applyGroupRates,
    joinRateGovernor: activity(joinRateGovernor),
    // Schedules and notifications (workflows/scheduled-run.ts, workflows/run-notify.ts).
    prepareFiring: activity(prepareFiringActivity({ env: resolved.env })),
    ...notifyActivities({ env: resolved.env }),
  };
}

/** The batch shard's (workflows/batch-shard.ts): OpenAI's Batch API and held calls. */
function batchActivities(resolved: ResolvedDeps, clients: ApiClients, gate: RateGate) {
  const { openaiBatchSubmit, openaiBatchStatus, openaiBatchCancel } = openaiBatchActivities({
    clients,
    runState: resolved.runState,
  });
  return {
    openaiBatchSubmit: activity(openaiBatchSubmit),
    openaiBatchStatus: activity(openaiBatchStatus),
    openaiBatchCancel: activity(openaiBatchCancel),
    // It beats with its progress itself.
    openaiBatchCollect: failuresMapped(openaiBatchCollectActivity({ clients, resolved })),
    openaiGenerate: activity(openaiGenerateActivity({ clients, resolved, gate })),
  };
}

/** The activities plus a way to release their connection pools. */
export function createActivityRuntime(deps: ActivityDeps = {}): ActivityRuntime {
  const resolved = resolveDeps(deps);
  const clients = new ApiClients(resolved);
  const gate = new RateGate({
    now: resolved.now,
    metrics: resolved.metrics,
    ...(resolved.apiWorkers !== undefined ? { apiWorkers: resolved.apiWorkers } : {}),
  });
  const followers = new StatusFollowers();
  return {
    activities: buildActivities(resolved, clients, gate, followers),
    close: async () => {
      followers.close();
      gate.close();
      await clients.close();
      resolved.closeStores();
    },
  };
}

/** Every activity of a run, keyed by its registered name. */
export function createActivities(deps: ActivityDeps = {}): Activities {
  return createActivityRuntime(deps).activities;
}

export type Activities = ActivityRuntime['activities'];
