// What a run's notifications are made of, shared by the manifest (manifest/notify.ts), the run
// workflow (workflows/run-notify.ts) and the activity that posts them (activities/notify.ts).
// Only names travel here: a notification's URL is a secret, read by the worker from the
// environment variable an entry names, never written to a plan, an input or a history.
import type { S3Location } from '../storage/s3-location.js';

/** When a run notifies: it ended with every item done, or something needs a person. */
export const NOTIFY_EVENTS = ['completed', 'failed', 'paused', 'deadline', 'budget'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** `on:` when an entry does not say: whatever needs a person, not the runs that went well. */
export const DEFAULT_NOTIFY_EVENTS: readonly NotifyEvent[] = ['failed', 'paused', 'deadline', 'budget'];

/** One `notify:` entry of the manifest. */
export interface NotifyTarget {
  /** The *name* of the worker's environment variable that holds the URL. */
  urlEnv: string;
  on: NotifyEvent[];
}

/** What a notification says about its run: facts from the run's result, never a secret. */
export interface NotifiedRun {
  runId: string;
  /** The catalog (the manifest's `name`). */
  name: string;
  /** The schedule that started it, when one did. */
  schedule?: string;
  /** One line: what completed and what did not (RunResult.outcome), or why it failed. */
  outcome?: string;
  counts?: { completed: number; failed: number; cancelled: number; expired: number; skipped: number };
  itemCount?: number;
  creditsSpent?: number;
  /** Why it stopped or paused, as the run says it. */
  reason?: string;
  /** Where its report is: a path on the workers' machines or an s3:// URL. */
  reportFile?: string;
  galleryFile?: string;
}

export interface NotifyInput {
  target: NotifyTarget;
  /** The events of `target.on` this run matched; one POST says them all. */
  events: NotifyEvent[];
  run: NotifiedRun;
}

export interface NotifyOutput {
  /** The receiver's HTTP status. */
  status: number;
}

/** summary.json's `notifications`: one per entry the run's end matched. */
export interface NotificationRecord {
  on: NotifyEvent[];
  url_env: string;
  delivered: boolean;
  /** Why it was not delivered, in one line (never the URL). */
  error?: string;
}

export interface RecordNotificationsInput {
  /** The run's summary.json: a path on the workers' machines or an s3:// URL (RunResult.summaryFile). */
  summaryFile: string;
  /** The run's S3 output, when it has one (its connection settings: endpoint, path style). */
  objectStore?: S3Location;
  notifications: NotificationRecord[];
}
