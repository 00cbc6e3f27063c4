// `notify:` in the manifest: where a run's notifications go (notify/message.ts says what they
// say). Each entry names the environment variable that holds its URL on the workers, never the
// URL itself: incoming-webhook URLs are secrets (whoever has one can post to the channel), and a
// manifest is copied, committed and frozen into plans.
import { z } from 'zod';
import { DEFAULT_NOTIFY_EVENTS, NOTIFY_EVENTS, type NotifyTarget } from '../common/notify-types.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const NotifySchema = z
  .array(
    z.strictObject({
      url_env: z
        .string()
        .refine((name) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(name), {
          message:
            'is the *name* of the environment variable that holds the URL (e.g. SLACK_WEBHOOK_URL), not the URL: such URLs are secrets',
        })
        .refine((name) => ENV_NAME.test(name), {
          message: 'must be an environment variable name (letters, digits and _, not starting with a digit)',
        }),
      on: z.array(z.enum(NOTIFY_EVENTS)).min(1).optional(),
    }),
  )
  .min(1);

export type NotifyEntries = z.infer<typeof NotifySchema>;

/** The entries as the run takes them, with each one's events (DEFAULT_NOTIFY_EVENTS when unsaid). */
export function notifyTargetsOf(entries: NotifyEntries | undefined): NotifyTarget[] | undefined {
  return entries?.map((entry) => ({
    urlEnv: entry.url_env,
    on: [...new Set(entry.on ?? DEFAULT_NOTIFY_EVENTS)],
  }));
}
