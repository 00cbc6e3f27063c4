// Names and types of scheduled runs (Temporal Schedules, client/schedules.ts): the schedule's id,
// the input of the workflow each firing starts (workflows/scheduled-run.ts), and the memo a run
// carries, whoever starts it, so that `status`, `list` and `report` find its files the same way.
import type { NotifyTarget } from './notify-types.js';
import { s3UrlOf } from '../storage/s3-location.js';
import type { PlanRef, RunInput } from './types.js';

export const SCHEDULE_PREFIX = 'pixelmill-schedule/';

/** `pixelmill-schedule/<name>`: the schedule on the Temporal UI's Schedules page. */
export function scheduleIdOf(name: string): string {
  return `${SCHEDULE_PREFIX}${name}`;
}

/**
 * The workflow id a firing starts under, before Temporal appends the firing's time to it
 * (`pixelmill-schedule/nightly-2026-11-28T02:00:00Z`): apart from the run's own id, which is the
 * catalog's (`pixelmill/<name>`), so a run by hand and a scheduled one are the same run.
 */
export function firingWorkflowIdOf(name: string): string {
  return scheduleIdOf(name);
}

/** The API account the schedule's runs belong to, fixed when it is created (as `run` fixes a run's). */
export interface ScheduledApi {
  account: string;
  /** Without credentials: for messages. */
  baseUrl: string;
  emulated: boolean;
}

/** The input of each firing: where the manifest is and whose runs it starts; never the manifest. */
export interface ScheduledRunInput {
  /** The schedule's name. */
  schedule: string;
  /** An s3:// URL, or a path every worker reads at the same place. */
  manifest: string;
  api: ScheduledApi;
  /** The manifest's `notify:` when the schedule was created: told when a firing cannot read it. */
  notify?: NotifyTarget[];
  /** The run's search attributes are registered (client/runs.ts, indexable). */
  indexed: boolean;
  prune?: boolean;
}

/** What the firing's activity made of the manifest at that moment. */
export type PreparedFiring =
  | {
      /** The manifest is what the last run made: nothing to do. */
      unchanged: string;
      runId: string;
    }
  | {
      runId: string;
      name: string;
      manifestFile: string;
      input: RunInput;
      /** The plan in one line (client/catalog-plan.ts describePlan). */
      plan: string;
      itemCount: number;
    };

export interface PrepareFiringInput {
  manifest: string;
  schedule: string;
  api: ScheduledApi;
  prune?: boolean;
}

export interface ScheduledRunResult {
  runId: string;
  /** One line: the run's outcome, or why the firing started none. */
  outcome: string;
  started: boolean;
}

/** A run's memo: what `status`, `report` and a next `run` read of it without a worker. */
export function runMemo(
  input: Omit<RunInput, 'plan'> & { plan: PlanRef },
  manifestFile: string,
  schedule?: string,
) {
  return {
    manifestHash: input.manifestHash,
    manifestFile,
    plan: input.plan,
    emulated: input.emulated,
    ...(input.apiAccount !== undefined ? { apiAccount: input.apiAccount, apiBaseUrl: input.apiBaseUrl } : {}),
    ...(schedule !== undefined ? { schedule } : {}),
  };
}

/** The run's details on the Temporal UI: its manifest, API and output. */
export function runStaticDetails(
  input: Omit<RunInput, 'plan'> & { plan: PlanRef },
  manifestFile: string,
  schedule?: string,
): string {
  const { plan } = input;
  return [
    `**Manifest** \`${manifestFile}\` (sha256 \`${input.manifestHash.slice(0, 12)}\`)`,
    `**API** ${input.emulated ? 'the built-in emulator (an emulated run)' : (input.apiBaseUrl ?? 'the configured image API')}` +
      (input.apiAccount ? ` (account \`${input.apiAccount}\`)` : ''),
    `**Output** \`report.jsonl\` and \`summary.json\` in ${plan.objectStore ? s3UrlOf(plan.objectStore) : "the manifest's output folder"}`,
    ...(schedule !== undefined ? [`**Schedule** \`${scheduleIdOf(schedule)}\` started it`] : []),
  ].join('\n\n');
}
