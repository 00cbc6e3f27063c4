// pixelmill's schedules on Temporal Schedules: the spec from the command line (cron with a time
// zone, or an interval), the API account the runs belong to, and what `schedule list` and
// `status` say of one (its next firing, its last firings and how they ended, those skipped).
// Each firing starts scheduledRunWorkflow (workflows/scheduled-run.ts) on the account's queue.
import {
  ScheduleOverlapPolicy,
  WorkflowFailedError,
  type Client,
  type ScheduleDescription,
  type ScheduleSpec,
} from '@temporalio/client';
import { API_BASE_URL_ENV, FALLBACK_API_KEY_ENV } from '../activities/api-clients.js';
import { API_ACCOUNT_ID, apiAccountId, displayBaseUrl } from '../common/api-account.js';
import { errorMessage, UserError } from '../common/errors.js';
import { taskQueuesOf } from '../common/names.js';
import {
  firingWorkflowIdOf,
  scheduleIdOf,
  type ScheduledApi,
  type ScheduledRunInput,
  type ScheduledRunResult,
} from '../common/schedules.js';
import { parseDuration } from '../manifest/durations.js';

/** `--catchup-window` by default: a firing missed while Temporal was down runs if it is at most this late. */
export const DEFAULT_CATCHUP_WINDOW = '1h';
/** Temporal's smallest catch-up window. */
const MIN_CATCHUP_MS = 10_000;
/** Temporal takes intervals to the second; a catalog run every few seconds is for tests. */
const MIN_EVERY_MS = 1_000;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export interface ScheduleTimes {
  cron?: string;
  every?: string;
  timezone?: string;
  catchupWindow?: string;
}

export interface ParsedSchedule {
  spec: ScheduleSpec;
  catchupWindowMs: number;
  /** `cron "0 2 * * *" in Europe/Berlin`, `every 6h`: what `schedule list` shows. */
  text: string;
}

/** A schedule's name: the manifest's by default; it names the schedule and its firings. */
export function checkScheduleName(name: string): string {
  if (!NAME.test(name))
    throw new UserError(
      'schedule_name_invalid',
      `schedule name "${name}" must be 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit`,
    );
  return name;
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The spec of `--cron`/`--every`/`--timezone`/`--catchup-window`, each mistake one line. */
export function parseScheduleTimes(times: ScheduleTimes): ParsedSchedule {
  const { cron, every, timezone } = times;
  if (cron === undefined && every === undefined)
    throw new UserError(
      'schedule_spec_missing',
      'say when: --cron "0 2 * * *" (with --timezone) or --every 6h',
    );
  if (cron !== undefined && every !== undefined)
    throw new UserError('schedule_spec_invalid', '--cron and --every are two ways of saying when: give one');
  const spec: ScheduleSpec = {};
  let text: string;
  if (cron !== undefined) {
    const fields = cron.trim().split(/\s+/);
    if (!(cron.trim().startsWith('@') || (fields.length >= 5 && fields.length <= 7)))
      throw new UserError(
        'schedule_spec_invalid',
        `--cron "${cron}" is not a cron expression: 5 fields (minute hour day-of-month month day-of-week), e.g. "0 2 * * *"`,
      );
    if (/^(CRON_)?TZ=/.test(cron.trim()))
      throw new UserError(
        'schedule_spec_invalid',
        '--cron: give the time zone with --timezone, not in the expression',
      );
    spec.cronExpressions = [cron.trim()];
    text = `cron "${cron.trim()}"`;
    if (timezone !== undefined) {
      if (!isTimeZone(timezone))
        throw new UserError(
          'schedule_spec_invalid',
          `--timezone ${timezone} is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)`,
        );
      spec.timezone = timezone;
      text += ` in ${timezone}`;
    } else text += ' in UTC';
  } else {
    if (timezone !== undefined)
      throw new UserError(
        'schedule_spec_invalid',
        '--timezone applies to --cron: --every counts from the Unix epoch, whatever the zone',
      );
    const ms = parseDuration(every!);
    if (ms === undefined || ms < MIN_EVERY_MS)
      throw new UserError(
        'schedule_spec_invalid',
        `--every ${every} is not a duration of 1s or more, e.g. 6h, 30m, 1h30m`,
      );
    spec.intervals = [{ every: ms }];
    text = `every ${every!.replace(/\s+/g, '')}`;
  }
  const windowText = times.catchupWindow ?? DEFAULT_CATCHUP_WINDOW;
  const catchupWindowMs = parseDuration(windowText);
  if (catchupWindowMs === undefined || catchupWindowMs < MIN_CATCHUP_MS)
    throw new UserError(
      'schedule_spec_invalid',
      `--catchup-window ${windowText} is not a duration of 10s or more (Temporal's smallest), e.g. 1h`,
    );
  return { spec, catchupWindowMs, text };
}

/**
 * The API account the schedule's runs belong to, from this environment as `run` finds it: a
 * firing's run must be served by workers holding that account's key, long after this command
 * ended. The built-in emulator lives only as long as a `pixelmill run`: a schedule needs an API
 * that stays up (`pixelmill emulator` will do, docs/nightly-runs.md).
 */
export function scheduledApi(
  settings: { apiBaseUrl?: string; apiKeyEnv: string },
  env: NodeJS.ProcessEnv,
  apiAccount?: string,
): ScheduledApi {
  const baseUrl = env[API_BASE_URL_ENV] || settings.apiBaseUrl;
  if (!baseUrl)
    throw new UserError(
      'api_not_configured',
      `a schedule's runs are served by long-lived workers (\`pixelmill worker\`) with an API that stays up: set ${API_BASE_URL_ENV} (or api.base_url) and its key, e.g. those of \`pixelmill emulator\` (docs/nightly-runs.md)`,
    );
  if (apiAccount !== undefined) {
    if (!API_ACCOUNT_ID.test(apiAccount))
      throw new UserError(
        'config_invalid',
        `--api-account ${apiAccount} is not an account id (a and 16 hex digits)`,
      );
    return { account: apiAccount, baseUrl: displayBaseUrl(baseUrl), emulated: false };
  }
  const key = env[settings.apiKeyEnv] || env[FALLBACK_API_KEY_ENV];
  if (!key)
    throw new UserError(
      'api_key_missing',
      `no API key for ${displayBaseUrl(baseUrl)}: set ${settings.apiKeyEnv === FALLBACK_API_KEY_ENV ? FALLBACK_API_KEY_ENV : `${settings.apiKeyEnv} (or ${FALLBACK_API_KEY_ENV})`}, or pass --api-account with the account id \`pixelmill worker\` prints`,
    );
  return { account: apiAccountId(baseUrl, key), baseUrl: displayBaseUrl(baseUrl), emulated: false };
}

export interface CreateSchedule {
  name: string;
  times: ParsedSchedule;
  input: ScheduledRunInput;
  catalog: string;
  paused?: boolean;
}

/** Creates the schedule on Temporal; one that exists already is the user's to delete first. */
export async function createSchedule(client: Client, schedule: CreateSchedule): Promise<void> {
  const { name, times, input } = schedule;
  try {
    await client.schedule.create({
      scheduleId: scheduleIdOf(name),
      spec: times.spec,
      action: {
        type: 'startWorkflow',
        workflowType: 'scheduledRunWorkflow',
        workflowId: firingWorkflowIdOf(name),
        taskQueue: taskQueuesOf(input.api.account).workflow,
        args: [input],
        staticSummary: `pixelmill schedule ${name}: ${input.manifest}`,
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: times.catchupWindowMs },
      memo: {
        manifest: input.manifest,
        catalog: schedule.catalog,
        when: times.text,
        apiAccount: input.api.account,
      },
      state: {
        ...(schedule.paused ? { paused: true } : {}),
        note: `pixelmill schedule create: ${times.text}`,
      },
    });
  } catch (error) {
    if ((error as { name?: string }).name === 'ScheduleAlreadyRunning')
      throw new UserError(
        'schedule_exists',
        `schedule ${name} exists: \`pixelmill schedule delete ${name}\` first, or create it under another --name`,
      );
    if ((error as { code?: number }).code === 3)
      throw new UserError('schedule_spec_invalid', `Temporal refused the schedule: ${errorMessage(error)}`);
    throw error;
  }
}

/** What `schedule list` shows of a firing. */
export interface FiringView {
  workflowId: string;
  scheduledAt: string;
  status: string;
  /** The firing's outcome or failure, in one line, once it ended. */
  outcome?: string;
}

export interface ScheduleView {
  name: string;
  manifest: string;
  catalog: string;
  when: string;
  paused: boolean;
  nextFiring: string | null;
  firings: number;
  skippedOverlap: number;
  missedCatchupWindow: number;
  running: boolean;
  recent: FiringView[];
}

async function firingView(client: Client, action: ScheduleDescription['info']['recentActions'][number]) {
  const { workflowId, firstExecutionRunId } = action.action.workflow;
  const handle = client.workflow.getHandle<(input: ScheduledRunInput) => Promise<ScheduledRunResult>>(
    workflowId,
    firstExecutionRunId,
  );
  const view: FiringView = { workflowId, scheduledAt: action.scheduledAt.toISOString(), status: 'UNKNOWN' };
  try {
    view.status = (await handle.describe()).status.name;
    if (view.status === 'COMPLETED') view.outcome = (await handle.result()).outcome;
    if (view.status === 'FAILED') {
      await handle.result().catch((error: unknown) => {
        view.outcome =
          error instanceof WorkflowFailedError && error.cause ? error.cause.message : errorMessage(error);
      });
    }
  } catch {
    // Gone from the server's retention: said as UNKNOWN.
  }
  return view;
}

/** The schedule as `schedule list` and `status` show it; undefined when there is none. */
export async function describeSchedule(
  client: Client,
  name: string,
  recent = 3,
): Promise<ScheduleView | undefined> {
  let description: ScheduleDescription;
  try {
    description = await client.schedule.getHandle(scheduleIdOf(name)).describe();
  } catch (error) {
    if ((error as { name?: string }).name === 'ScheduleNotFoundError') return undefined;
    throw error;
  }
  const memo = (description.memo ?? {}) as Record<string, unknown>;
  const { info, state } = description;
  return {
    name,
    manifest: String(memo.manifest ?? ''),
    catalog: String(memo.catalog ?? ''),
    when: String(memo.when ?? ''),
    paused: state.paused,
    nextFiring: state.paused ? null : (info.nextActionTimes[0]?.toISOString() ?? null),
    firings: info.numActionsTaken,
    skippedOverlap: info.numActionsSkippedOverlap,
    missedCatchupWindow: info.numActionsMissedCatchupWindow,
    running: info.runningActions.length > 0,
    recent: await Promise.all(
      (recent > 0 ? info.recentActions.slice(-recent) : []).map((action) => firingView(client, action)),
    ),
  };
}

/** The names of pixelmill's schedules on this Temporal. */
export async function scheduleNames(client: Client): Promise<string[]> {
  const names: string[] = [];
  for await (const summary of client.schedule.list())
    if (summary.scheduleId.startsWith(scheduleIdOf('')))
      names.push(summary.scheduleId.slice(scheduleIdOf('').length));
  return names.sort();
}

/** The handle of schedule `name`, refusing a name that has none. */
export async function requireSchedule(client: Client, name: string) {
  const handle = client.schedule.getHandle(scheduleIdOf(name));
  try {
    await handle.describe();
  } catch (error) {
    if ((error as { name?: string }).name === 'ScheduleNotFoundError')
      throw new UserError(
        'schedule_not_found',
        `no schedule ${name} on this Temporal (see \`pixelmill schedule list\`)`,
      );
    throw error;
  }
  return handle;
}

/** One schedule in a few lines, for people. */
export function describeScheduleLines(view: ScheduleView): string[] {
  const next = view.paused ? 'paused' : view.nextFiring ? `next firing ${view.nextFiring}` : 'no next firing';
  const lines = [
    `${view.name}: ${view.when}, ${next}; ${view.manifest} (catalog ${view.catalog})`,
    `  ${view.firings} firing${view.firings === 1 ? '' : 's'}` +
      (view.skippedOverlap > 0 ? `, ${view.skippedOverlap} skipped while the last one still ran` : '') +
      (view.missedCatchupWindow > 0
        ? `, ${view.missedCatchupWindow} missed (later than the catch-up window)`
        : '') +
      (view.running ? '; one running now' : ''),
  ];
  for (const firing of view.recent)
    lines.push(
      `  ${firing.scheduledAt} ${firing.status.toLowerCase()}${firing.outcome ? `: ${firing.outcome}` : ''}`,
    );
  return lines;
}

/**
 * Fires schedule `name` now, under its own overlap policy: skipped while its last firing runs.
 * (A trigger's default policy is ALLOW_ALL, under which the schedule does not even track what it
 * started, so later firings would not be skipped either.)
 */
export async function fireNow(client: Client, name: string): Promise<void> {
  await (await requireSchedule(client, name)).trigger(ScheduleOverlapPolicy.SKIP);
}

/** What `status` and `list` say of the schedule that started a run (its memo's `schedule`). */
export interface RunSchedule {
  name: string;
  paused: boolean;
  /** null when paused, deleted or done. */
  nextFiring: string | null;
}

/** The schedule named in a run's memo, as it is now; null for a run started by hand or a schedule gone. */
export async function scheduleOfRun(
  client: Client,
  memo: Record<string, unknown> | undefined,
): Promise<RunSchedule | null> {
  const name = memo?.schedule;
  if (typeof name !== 'string') return null;
  const view = await describeSchedule(client, name, 0).catch(() => undefined);
  return { name, paused: view?.paused ?? false, nextFiring: view?.nextFiring ?? null };
}

/** `schedule nightly, next firing ...`: one line for `status`, a suffix for `list`. */
export function runScheduleText(schedule: RunSchedule): string {
  const next = schedule.paused
    ? 'paused'
    : schedule.nextFiring
      ? `next firing ${schedule.nextFiring}`
      : 'no next firing';
  return `schedule ${schedule.name}, ${next}`;
}
