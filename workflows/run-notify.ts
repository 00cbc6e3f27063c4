// A run's notifications (the manifest's `notify:`), sent by activities on the run's workflow
// queue: when the run pauses itself for a person (the API refused the key or the credits ran
// out), and when it ends (completed, failed items, deadline, budget) or fails. One POST per
// matching entry, each retried a few times over a few minutes; one that is not delivered is
// recorded in summary.json and never fails the run.
// A run without `notify:` issues no command here, so histories recorded before it replay as before.
import { ActivityFailure, ApplicationFailure, proxyActivities, type RetryPolicy } from '@temporalio/workflow';
import type { notifyActivities } from '../activities/notify.js';
import type {
  NotificationRecord,
  NotifiedRun,
  NotifyEvent,
  NotifyTarget,
  RecordNotificationsInput,
} from '../common/notify-types.js';
import { endEvents, finalCounts, matchingTargets } from '../notify/message.js';
import type { S3Location } from '../storage/s3-location.js';
import type { PreparedRun, RunResult } from '../common/types.js';

type NotifyActivities = ReturnType<typeof notifyActivities>;

/** What a notification says of a run besides its result: its name, schedule, size and the reason it stopped. */
export function notifiedRun(
  runId: string,
  prepared: Pick<PreparedRun, 'name' | 'itemCount'> | undefined,
  schedule: string | undefined,
  reason: string | undefined,
): NotifiedRun {
  return {
    runId,
    name: prepared?.name ?? runId,
    ...(schedule !== undefined ? { schedule } : {}),
    ...(prepared ? { itemCount: prepared.itemCount } : {}),
    ...(reason !== undefined ? { reason } : {}),
  };
}

/**
 * Attempts at 0, 5 s, 20 s, 1 min 5 s and 3 min 20 s: a receiver down for a few minutes still gets
 * the message, and a run is never held longer than that by its notifications.
 */
export const NOTIFY_RETRY: RetryPolicy = {
  initialInterval: '5 seconds',
  backoffCoefficient: 3,
  maximumInterval: '2 minutes',
  maximumAttempts: 5,
  nonRetryableErrorTypes: ['NotifyUrlMissingError', 'NotifyRefusedError'],
};

function notifyActivitiesOn(taskQueue: string) {
  return proxyActivities<NotifyActivities>({
    taskQueue,
    startToCloseTimeout: '30 seconds',
    retry: NOTIFY_RETRY,
  });
}

/** The last failure of a notification that was not delivered, in one line. */
function failureLine(error: unknown): string {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof Error ? cause.message : String(cause);
}

export class RunNotifier {
  readonly #targets: readonly NotifyTarget[];
  readonly #activities: ReturnType<typeof notifyActivitiesOn>;
  #pending = 0;
  /** Told once per pause: every shard refused by the API says so. */
  #pauseTold = false;

  constructor(targets: readonly NotifyTarget[], taskQueue: string) {
    this.#targets = targets;
    this.#activities = notifyActivitiesOn(taskQueue);
  }

  /** No notification is being sent: the run may end or continue as new. */
  get idle(): boolean {
    return this.#pending === 0;
  }

  /** Sends to every entry that wants one of `events`; what became of each, in entry order. */
  async send(events: readonly NotifyEvent[], run: NotifiedRun): Promise<NotificationRecord[]> {
    const matches = matchingTargets(this.#targets, events);
    this.#pending++;
    try {
      return await Promise.all(
        matches.map(async ({ target, events: on }) => {
          const record = { on, url_env: target.urlEnv };
          try {
            await this.#activities.notify.executeWithOptions(
              { summary: `notify ${target.urlEnv}: ${on.join(', ')}` },
              [{ target, events: on, run }],
            );
            return { ...record, delivered: true };
          } catch (error) {
            return { ...record, delivered: false, error: failureLine(error) };
          }
        }),
      );
    } finally {
      this.#pending--;
    }
  }

  /** The run paused itself for a person (a refusal of the account): told once until it resumes. */
  paused(run: NotifiedRun): void {
    if (this.#pauseTold) return;
    this.#pauseTold = true;
    void this.send(['paused'], run);
  }

  resumed(): void {
    this.#pauseTold = false;
  }

  /** The run ended: its events told, and what became of them added to its summary.json. */
  async ended(result: RunResult, run: NotifiedRun, objectStore: S3Location | undefined): Promise<void> {
    const records = await this.send(endEvents(result), {
      ...run,
      ...(result.outcome !== undefined ? { outcome: result.outcome } : {}),
      counts: finalCounts(result.counts),
      creditsSpent: result.creditsSpent,
      reportFile: result.reportFile,
      ...(result.galleryFile !== undefined ? { galleryFile: result.galleryFile } : {}),
    });
    if (records.length === 0) return;
    const record: RecordNotificationsInput = {
      summaryFile: result.summaryFile,
      notifications: records,
      ...(objectStore ? { objectStore } : {}),
    };
    try {
      await this.#activities.recordNotifications(record);
    } catch {
      // The summary keeps what it had; the history records every attempt.
    }
  }

  /** The run itself failed: told, then the failure goes on. */
  async failed(run: NotifiedRun, error: unknown): Promise<void> {
    const message =
      error instanceof ApplicationFailure || error instanceof Error ? error.message : String(error);
    await this.send(['failed'], { ...run, outcome: `the run failed: ${message}` });
  }
}
