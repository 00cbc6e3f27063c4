// The pure parts of a run's notifications: which events a run's end (or its pause) matches, which
// `notify:` entries want them, and the JSON that is posted. The body is what Slack's incoming
// webhooks take (`text` for the notification and clients without blocks, `blocks` for the
// message; api.slack.com/messaging/webhooks), which Mattermost, Rocket.Chat and most chat tools
// accept as well. Nothing here reads the environment: the URL stays in the activity.
import type { ItemCounts, RunResult } from '../common/types.js';
import { plural } from '../common/words.js';
import type { NotifiedRun, NotifyEvent, NotifyTarget } from '../common/notify-types.js';

/** The events a finished run matches: at most one of `completed` and the others. */
export function endEvents(result: Pick<RunResult, 'counts' | 'endedByDeadline'>): NotifyEvent[] {
  const { failed, expired, skipped, cancelled } = result.counts;
  const events: NotifyEvent[] = [];
  if (failed + expired > 0) events.push('failed');
  if ((result.endedByDeadline ?? 0) > 0) events.push('deadline');
  // Only the budget skips items (workflows/shard-items.ts: budget_exhausted).
  if (skipped > 0) events.push('budget');
  if (events.length === 0 && cancelled === 0) events.push('completed');
  return events;
}

/** Each entry that wants one of `events`, with the events it wants: one POST each. */
export function matchingTargets(
  targets: readonly NotifyTarget[],
  events: readonly NotifyEvent[],
): { target: NotifyTarget; events: NotifyEvent[] }[] {
  return targets
    .map((target) => ({ target, events: events.filter((event) => target.on.includes(event)) }))
    .filter((match) => match.events.length > 0);
}

/** Slack's three control characters in mrkdwn text (api.slack.com/reference/surfaces/formatting). */
function escaped(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const HEADLINES: Record<NotifyEvent, string> = {
  completed: 'completed',
  failed: 'failed',
  paused: 'paused: it needs a person',
  deadline: 'ended by its deadline with items undone',
  budget: 'stopped by its budget with items undone',
};

function countsLine(counts: NotifiedRun['counts'], itemCount: number | undefined): string | undefined {
  if (!counts) return undefined;
  const parts = (['completed', 'failed', 'expired', 'skipped', 'cancelled'] as const)
    .filter((key) => key === 'completed' || counts[key] > 0)
    .map((key) => `${counts[key]} ${key}`);
  return itemCount !== undefined ? `${parts.join(', ')} of ${itemCount}` : parts.join(', ');
}

export interface MessageLinks {
  /** The run in the Temporal Web UI, when the worker knows the UI's address. */
  temporalUi?: string;
}

/** A link in mrkdwn when it is one (http), else the location as code (a path, an s3:// URL). */
function location(label: string, where: string): string {
  return /^https?:\/\//i.test(where)
    ? `<${where}|${escaped(label)}>`
    : `${escaped(label)}: \`${escaped(where)}\``;
}

export interface SlackMessage {
  text: string;
  blocks: Record<string, unknown>[];
}

/** The JSON posted for `run` matching `events`. */
export function slackMessage(
  run: NotifiedRun,
  events: readonly NotifyEvent[],
  links: MessageLinks = {},
): SlackMessage {
  const what = events.map((event) => HEADLINES[event]).join('; ');
  const counts = countsLine(run.counts, run.itemCount);
  const credits =
    run.creditsSpent !== undefined ? plural(Math.round(run.creditsSpent * 100) / 100, 'credit') : undefined;
  const by = run.schedule ? ` (schedule ${run.schedule})` : '';
  const text =
    `pixelmill: ${run.runId}${by} ${what}` +
    (counts ? `: ${counts}` : '') +
    (credits ? `; ${credits}` : '') +
    (run.reason ? `. ${run.reason}` : '');
  const facts = [
    ...(counts ? [`*Items* ${escaped(counts)}`] : []),
    ...(credits ? [`*Credits* ${credits}`] : []),
  ];
  const where = [
    ...(links.temporalUi ? [`<${links.temporalUi}|Temporal UI>`] : []),
    ...(run.reportFile ? [location('report', run.reportFile)] : []),
    ...(run.galleryFile ? [location('gallery', run.galleryFile)] : []),
  ];
  const blocks: Record<string, unknown>[] = [
    {
      type: 'section',
      text: { type: 'mrkdwn', text: `*${escaped(run.runId)}*${escaped(by)} ${escaped(what)}` },
    },
    ...(facts.length
      ? [{ type: 'section', fields: facts.map((fact) => ({ type: 'mrkdwn', text: fact })) }]
      : []),
    ...(run.outcome ? [{ type: 'section', text: { type: 'mrkdwn', text: escaped(run.outcome) } }] : []),
    ...(run.reason
      ? [{ type: 'section', text: { type: 'mrkdwn', text: `*Reason* ${escaped(run.reason)}` } }]
      : []),
    ...(where.length ? [{ type: 'context', elements: where.map((text) => ({ type: 'mrkdwn', text })) }] : []),
  ];
  return { text, blocks };
}

/** The counts a notification shows: the final ones only. */
export function finalCounts(counts: ItemCounts): NonNullable<NotifiedRun['counts']> {
  const { completed, failed, cancelled, expired, skipped } = counts;
  return { completed, failed, cancelled, expired, skipped };
}
