// The activities of a run's notifications: `notify` posts one message (notify/message.ts) to the
// URL in the worker's environment variable that a `notify:` entry names, and
// `recordNotifications` writes what became of them into the run's summary.json. The URL is a
// secret: it is read here, sent nowhere else, and no error or log line ever quotes it.
// A refusal that another attempt cannot change (a 4xx, no URL) fails for good; a 429, a 5xx or
// an unreachable receiver is retried by Temporal (workflows/run-notify.ts bounds the attempts).
import { readFile } from 'node:fs/promises';
import { ApplicationFailure } from '@temporalio/activity';
import { request } from 'undici';
import type { NotifyInput, NotifyOutput, RecordNotificationsInput } from '../common/notify-types.js';
import { slackMessage } from '../notify/message.js';
import { writeFileAtomic } from '../runstate/files.js';
import { S3Objects } from '../storage/s3-objects.js';
import { isS3Url, parseS3Url } from '../storage/s3-location.js';
import { activityContext } from './context.js';
import { PixelmillError } from '../common/errors.js';

/** Long enough for a chat service under load, short enough to retry a stalled one. */
const NOTIFY_TIMEOUT_MS = 10_000;

/** The Temporal UI the CLI links to for a cluster; the worker's links use the same variable. */
export const TEMPORAL_UI_URL_ENV = 'PIXELMILL_TEMPORAL_UI_URL';

/** The variable a `notify:` entry names is unset or not an http(s) URL on this worker. */
export class NotifyUrlMissingError extends PixelmillError {
  override name = 'NotifyUrlMissingError';
  readonly code = 'notify_url_missing';
  readonly retryable = false;
}

/** The receiver refused the message (a 4xx other than 429): another attempt would be refused too. */
export class NotifyRefusedError extends PixelmillError {
  override name = 'NotifyRefusedError';
  readonly code = 'notify_refused';
  readonly retryable = false;
}

/** The receiver could not be reached, timed out, throttled or answered 5xx. */
export class NotifyUnavailableError extends PixelmillError {
  override name = 'NotifyUnavailableError';
  readonly code = 'notify_unavailable';
  readonly retryable = true;
}

function failure(error: PixelmillError): ApplicationFailure {
  return ApplicationFailure.create({
    type: error.name,
    message: error.message,
    nonRetryable: !error.retryable,
  });
}

function urlOf(env: NodeJS.ProcessEnv, urlEnv: string): URL {
  const value = env[urlEnv];
  if (!value) throw new NotifyUrlMissingError(`notify: ${urlEnv} is not set on the worker`);
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol))
    throw new NotifyUrlMissingError(`notify: ${urlEnv} on the worker is not an http(s) URL`);
  return new URL(value);
}

/** The run in the Temporal Web UI, when the worker is told where the UI is. */
function temporalUiLink(env: NodeJS.ProcessEnv, runId: string): string | undefined {
  const ui = env[TEMPORAL_UI_URL_ENV]?.replace(/\/+$/, '');
  const namespace = activityContext()?.info.workflowNamespace;
  if (!ui || namespace === undefined) return undefined;
  return `${ui}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(runId)}`;
}

export function notifyActivities(deps: { env: NodeJS.ProcessEnv }) {
  async function notify(input: NotifyInput): Promise<NotifyOutput> {
    const { target, events, run } = input;
    try {
      const url = urlOf(deps.env, target.urlEnv);
      const ui = temporalUiLink(deps.env, run.runId);
      const body = JSON.stringify(slackMessage(run, events, ui ? { temporalUi: ui } : {}));
      let status: number;
      try {
        const answer = await request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          headersTimeout: NOTIFY_TIMEOUT_MS,
          bodyTimeout: NOTIFY_TIMEOUT_MS,
        });
        status = answer.statusCode;
        await answer.body.dump();
      } catch (error) {
        // undici's messages name the host at most, never the path (where webhook URLs keep their secret).
        const why = (error as { code?: string }).code ?? 'network error';
        throw new NotifyUnavailableError(
          `notify: the receiver in ${target.urlEnv} could not be reached (${why})`,
        );
      }
      if (status >= 200 && status < 300) return { status };
      if (status === 429 || status >= 500)
        throw new NotifyUnavailableError(`notify: the receiver in ${target.urlEnv} answered ${status}`);
      throw new NotifyRefusedError(
        `notify: the receiver in ${target.urlEnv} refused the message (${status})`,
      );
    } catch (error) {
      throw error instanceof PixelmillError ? failure(error) : error;
    }
  }

  /** Adds `notifications` to the run's summary.json, where it was written (a folder or its S3 output). */
  async function recordNotifications(input: RecordNotificationsInput): Promise<void> {
    const { summaryFile, notifications } = input;
    const patch = (text: string): string => {
      const summary = JSON.parse(text) as Record<string, unknown>;
      return `${JSON.stringify({ ...summary, notifications }, null, 2)}\n`;
    };
    if (!isS3Url(summaryFile)) {
      await writeFileAtomic(summaryFile, [patch(await readFile(summaryFile, 'utf8'))]);
      return;
    }
    const parsed = parseS3Url(summaryFile);
    if ('problems' in parsed)
      throw new Error(`summary.json at ${summaryFile}: ${parsed.problems.join('; ')}`);
    const slash = parsed.prefix.lastIndexOf('/');
    const objects = new S3Objects({
      env: deps.env,
      location: {
        ...input.objectStore,
        bucket: parsed.bucket,
        prefix: slash < 0 ? '' : parsed.prefix.slice(0, slash),
      },
    });
    try {
      const name = parsed.prefix.slice(slash + 1);
      const text = await objects.read(name);
      if (text === undefined) throw new Error(`no summary.json at ${summaryFile}`);
      await objects.write(name, patch(text));
    } finally {
      objects.close();
    }
  }

  return { notify, recordNotifications };
}
