// `pixelmill schedule create|list|pause|resume|trigger|delete`: runs of a manifest that start by
// themselves, on Temporal Schedules (client/schedules.ts). Each firing reads the manifest where it
// is at that moment (a bucket, or a path the workers read) and runs what changed; the workers
// serve the firings, so a schedule needs workers that stay up (docs/nightly-runs.md).
import { resolve } from 'node:path';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import type { Command } from 'commander';
import { scheduleIdOf, type ScheduledRunInput } from '../../common/schedules.js';
import { runWorkflowId } from '../../common/names.js';
import { loadManifestAt } from '../../manifest/store-source.js';
import { isS3Url } from '../../storage/s3-location.js';
import { indexable } from '../runs.js';
import { CLI_S3_ATTEMPTS } from '../run-files.js';
import {
  checkScheduleName,
  createSchedule,
  DEFAULT_CATCHUP_WINDOW,
  describeSchedule,
  describeScheduleLines,
  parseScheduleTimes,
  requireSchedule,
  scheduledApi,
  scheduleNames,
  type ScheduleView,
} from '../schedules.js';
import { openSession, type Session } from '../session.js';
import { examples } from './with-run.js';

interface CreateOptions {
  name?: string;
  cron?: string;
  every?: string;
  timezone?: string;
  catchupWindow?: string;
  paused?: boolean;
  prune?: boolean;
  apiAccount?: string;
}

const say = (line: string): void => void process.stderr.write(`${line}\n`);

async function withSession<T>(body: (session: Session) => Promise<T>): Promise<T> {
  const session = await openSession({ log: say });
  try {
    return await body(session);
  } finally {
    await session.close();
  }
}

/** The schedule on the Temporal UI's Schedules page, when the UI's address is known. */
function scheduleUrl(session: Session, name: string): string | undefined {
  if (!session.uiUrl) return undefined;
  return `${session.uiUrl}/namespaces/${encodeURIComponent(session.endpoint.namespace)}/schedules/${encodeURIComponent(scheduleIdOf(name))}`;
}

async function create(file: string, options: CreateOptions): Promise<void> {
  const times = parseScheduleTimes(options);
  // A path is the workers' to read at each firing: the same absolute path on every one of them.
  const location = isS3Url(file) ? file : resolve(file);
  const at = await loadManifestAt(location, { maxAttempts: CLI_S3_ATTEMPTS });
  await at.release();
  const { settings } = at.manifest;
  const name = checkScheduleName(options.name ?? settings.name);
  const api = scheduledApi(settings, process.env, options.apiAccount);
  await withSession(async (session) => {
    const input: ScheduledRunInput = {
      schedule: name,
      manifest: location,
      api,
      ...(settings.notify ? { notify: settings.notify } : {}),
      indexed: (await indexable(session.client)) === undefined,
      ...(options.prune ? { prune: true } : {}),
    };
    await createSchedule(session.client, {
      name,
      times,
      input,
      catalog: settings.name,
      ...(options.paused ? { paused: true } : {}),
    });
    const view = await describeSchedule(session.client, name, 0);
    const next = options.paused ? 'created paused' : `next firing ${view?.nextFiring ?? 'unknown'}`;
    say(
      `pixelmill: schedule ${name} created on ${session.endpoint.display}: ${times.text}, ${next}; ` +
        `each firing runs what changed in ${location} as ${runWorkflowId(settings.name)}`,
    );
    say(
      `pixelmill: firings are served by \`pixelmill worker\` with API account ${api.account} (${api.baseUrl}): keep one running`,
    );
    if (!isS3Url(location))
      say(`pixelmill: the workers read ${location}: it must be at this path on every one of them`);
    const link = scheduleUrl(session, name);
    if (link) say(`pixelmill: Temporal Web UI: ${link}`);
  });
}

async function list(options: { json?: boolean }): Promise<void> {
  await withSession(async (session) => {
    const views: ScheduleView[] = [];
    for (const name of await scheduleNames(session.client)) {
      const view = await describeSchedule(session.client, name);
      if (view) views.push(view);
    }
    if (options.json) {
      process.stdout.write(`${JSON.stringify(views, null, 2)}\n`);
      return;
    }
    if (views.length === 0) {
      process.stdout.write('no schedules (`pixelmill schedule create MANIFEST --every 6h` makes one)\n');
      return;
    }
    process.stdout.write(`${views.flatMap(describeScheduleLines).join('\n')}\n`);
  });
}

/** pause, resume, trigger and delete: one call on the schedule's handle each. */
const ACTIONS = {
  pause: {
    description: 'stop the firings of a schedule until `schedule resume` (a running firing goes on)',
    act: (handle: Awaited<ReturnType<typeof requireSchedule>>) =>
      handle.pause('paused by pixelmill schedule pause'),
    done: 'paused',
  },
  resume: {
    description: 'fire a paused schedule again at its times',
    act: (handle: Awaited<ReturnType<typeof requireSchedule>>) =>
      handle.unpause('resumed by pixelmill schedule resume'),
    done: 'resumed',
  },
  trigger: {
    description: 'fire a schedule now (skipped, as its firings are, while its last one still runs)',
    act: (handle: Awaited<ReturnType<typeof requireSchedule>>) => handle.trigger(ScheduleOverlapPolicy.SKIP),
    done: 'triggered',
  },
  delete: {
    description: 'delete a schedule (a running firing and its run go on; outputs are kept)',
    act: (handle: Awaited<ReturnType<typeof requireSchedule>>) => handle.delete(),
    done: 'deleted',
  },
} as const;

export function registerScheduleCommand(program: Command): void {
  const schedule = program
    .command('schedule')
    .description('runs of a manifest that start by themselves, on Temporal Schedules (docs/nightly-runs.md)')
    .addHelpText(
      'after',
      examples(
        'pixelmill schedule create s3://shop-exports/catalog.yaml --cron "0 2 * * *" --timezone Europe/Berlin',
        'pixelmill schedule list',
        'pixelmill schedule trigger shop',
      ),
    );
  schedule
    .command('create')
    .description('fire an incremental run of a manifest at times: what changed in it since the last run')
    .argument('<manifest>', 'the manifest: an s3:// URL, or a file the workers read at the same path')
    .option('--name <name>', "the schedule's name (default: the manifest's name)")
    .option('--cron <expression>', 'when, as cron: "minute hour day-of-month month day-of-week"')
    .option('--timezone <zone>', 'the IANA time zone of --cron (default UTC), e.g. Europe/Berlin')
    .option('--every <duration>', 'when, as an interval from the Unix epoch: 6h, 30m, 1h30m')
    .option(
      '--catchup-window <duration>',
      'a firing missed while Temporal was down still runs (once) if at most this late',
      DEFAULT_CATCHUP_WINDOW,
    )
    .option('--paused', 'create it paused (`pixelmill schedule resume NAME` starts it)')
    .option('--prune', "each run deletes stored results the manifest no longer has (run's --prune)")
    .option(
      '--api-account <id>',
      "the API account's id that `pixelmill worker` prints, when this machine has no key",
    )
    .addHelpText(
      'after',
      examples(
        'pixelmill schedule create s3://shop-exports/catalog.yaml --cron "0 2 * * *" --timezone Europe/Berlin',
        'pixelmill schedule create /srv/catalogs/shop.yaml --every 6h --name shop-6h',
      ) +
        '\n\nA firing while the last one still runs is skipped (`schedule list` counts them). A firing' +
        '\nwhose manifest cannot be read or is invalid fails with the reason and writes nothing.' +
        '\nFirings are served by `pixelmill worker` with the API key of the account named here.',
    )
    .action((file: string, options: CreateOptions) => create(file, options));
  schedule
    .command('list')
    .description("pixelmill's schedules: when they fire next, their last firings and how they ended")
    .option('--json', 'as JSON')
    .action((options: { json?: boolean }) => list(options));
  for (const [verb, { description, act, done }] of Object.entries(ACTIONS)) {
    schedule
      .command(verb)
      .description(description)
      .argument('<name>', "the schedule's name (`pixelmill schedule list`)")
      .action((name: string) =>
        withSession(async (session) => {
          await act(await requireSchedule(session.client, name));
          say(`pixelmill: schedule ${name} ${done}`);
        }),
      );
  }
}
