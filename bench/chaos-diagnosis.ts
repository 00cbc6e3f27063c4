// What a chaos run that missed its deadline was waiting for, written beside its kept folder
// (`diagnosis.json`): the run's and every running shard's progress, and each pending activity
// with its attempt, state, last failure and times. Read together with the dev server's SQLite
// state and the worker logs that the harness keeps in the same folder.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/common';
import { runProgressQuery, runWorkflowId, shardProgressQuery } from '../common/names.js';
import { withClient, type TemporalEndpoint } from './chaos-temporal.js';

interface PendingActivity {
  type: string | null | undefined;
  state: string;
  attempt: number | null | undefined;
  scheduled: string | undefined;
  lastStarted: string | undefined;
  lastHeartbeat: string | undefined;
  lastFailure: string | null | undefined;
  lastWorker: string | null | undefined;
}

interface WorkflowDiagnosis {
  workflowId: string;
  runId: string;
  status: string;
  progress: unknown;
  pendingActivities: PendingActivity[];
}

const ACTIVITY_STATES = [
  'UNSPECIFIED',
  'SCHEDULED',
  'STARTED',
  'CANCEL_REQUESTED',
  'PAUSED',
  'PAUSE_REQUESTED',
];

function isoTime(time: { seconds?: unknown; nanos?: number | null } | null | undefined): string | undefined {
  if (!time?.seconds) return undefined;
  return new Date(Number(time.seconds) * 1000 + Math.floor((time.nanos ?? 0) / 1e6)).toISOString();
}

async function diagnose(client: Client, workflowId: string, query: QueryDefinition<unknown>) {
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe();
  const pending = description.raw.pendingActivities ?? [];
  return {
    workflowId,
    runId: description.runId,
    status: description.status.name,
    progress: await handle.query(query).catch((error: unknown) => `query failed: ${String(error)}`),
    pendingActivities: pending.map((activity) => ({
      type: activity.activityType?.name,
      state: ACTIVITY_STATES[activity.state ?? 0] ?? String(activity.state),
      attempt: activity.attempt,
      scheduled: isoTime(activity.scheduledTime),
      lastStarted: isoTime(activity.lastStartedTime),
      lastHeartbeat: isoTime(activity.lastHeartbeatTime),
      lastFailure: activity.lastFailure?.message,
      lastWorker: activity.lastWorkerIdentity,
    })),
  } satisfies WorkflowDiagnosis;
}

/** Writes `<dir>/diagnosis.json` for the run named `runName`; never throws (it is a post-mortem). */
export async function writeChaosDiagnosis(
  temporal: TemporalEndpoint,
  runName: string,
  dir: string,
): Promise<string> {
  const file = join(dir, 'diagnosis.json');
  try {
    await withClient(temporal, async (client) => {
      const run = await diagnose(
        client,
        runWorkflowId(runName),
        runProgressQuery as QueryDefinition<unknown>,
      );
      const shards: WorkflowDiagnosis[] = [];
      const progress = run.progress as { runningShards?: string[] };
      for (const shard of progress.runningShards ?? [])
        shards.push(await diagnose(client, shard, shardProgressQuery as QueryDefinition<unknown>));
      writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), run, shards }, null, 2));
    });
  } catch (error) {
    writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), error: String(error) }, null, 2));
  }
  return file;
}
