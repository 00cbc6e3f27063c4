// Schedules end to end (issue 42): a real Temporal dev server and its Schedules, pixelmill's
// workers in this process, the emulator over HTTP (its ground truth counts every task) and a real
// S3-compatible server holding the catalog. A schedule every few seconds fires again and again;
// the first firing runs the catalog, the next one that finds it edited in the bucket generates
// only the edited and added items; a manifest made invalid fails its firing with the reason and
// leaves the output as it was. A firing while the last one still runs is skipped and counted.
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groundTruth, parseReport } from '../bench/catalog-audit.js';
import { startS3Server, type S3TestServer } from '../bench/s3-server.js';
import { createActivityRuntime } from '../activities/index.js';
import { indexable } from '../client/runs.js';
import { buildProgram } from '../client/program.js';
import { listRuns } from '../client/commands/list.js';
import { runStatus } from '../client/commands/status.js';
import {
  createSchedule,
  describeSchedule,
  describeScheduleLines,
  fireNow,
  parseScheduleTimes,
  requireSchedule,
  scheduledApi,
  type FiringView,
} from '../client/schedules.js';
import { taskQueuesOf } from '../common/names.js';
import { scheduleIdOf, type ScheduledApi } from '../common/schedules.js';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import { createPixelmillWorkers } from '../worker/workers.js';
import { FAST_EMULATOR, startCatalogHarness } from './support/catalog-harness.js';
import { startLoopbackServer } from './support/loopback-server.js';
import { waitUntil } from './support/wait.js';

const BUCKET = 'exports';
const MANIFEST = `s3://${BUCKET}/nightly/catalog.yaml`;
let s3: S3TestServer;
let client: Client;
let emulator: RunningEmulator;
let api: ScheduledApi;
let temporalAddress: string;
/** What the receiver standing in for Slack got. */
const messages: string[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

const put = (key: string, body: string) =>
  s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
const text = async (key: string) =>
  (await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body!.transformToString();
const tasks = async (): Promise<number> => (await groundTruth(emulator)).length;

/** Every object under the output with its ETag: what "left alone" means. */
async function outputObjects(): Promise<string[]> {
  const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'nightly/out/' }));
  return (listed.Contents ?? []).map((object) => `${object.Key} ${object.ETag}`).sort();
}

function writeManifest(extra: string[] = []): Promise<unknown> {
  return put(
    'nightly/catalog.yaml',
    [
      'name: nightly',
      'limits: { requests_per_second: 200 }',
      'output:',
      `  dir: s3://${BUCKET}/nightly/out`,
      `  endpoint: ${s3.endpoint}`,
      '  force_path_style: true',
      'items_file: items.csv',
      'notify: [{ url_env: NOTIFY_OPS, on: [completed, failed] }]',
      ...extra,
    ].join('\n'),
  );
}

const writeItems = (rows: string[]) => put('nightly/items.csv', ['id,prompt', ...rows].join('\n'));

/** The firings of `name` the server remembers, oldest first, with how each ended. */
async function firings(name: string): Promise<FiringView[]> {
  return (await describeSchedule(client, name, 10))?.recent ?? [];
}

beforeAll(async () => {
  const harness = await startCatalogHarness(FAST_EMULATOR);
  ({ emulator } = harness);
  client = harness.env.client;
  temporalAddress = harness.env.address;
  s3 = await startS3Server();
  cleanups.push(() => s3.stop());
  await s3.createBucket(BUCKET);
  // The worker's environment: the bucket's keys, and where the store is for a manifest's s3:// URL
  // (an output names its endpoint; a manifest's location is reached as the AWS environment says).
  // The planning code reads process.env, as `pixelmill worker` does.
  Object.assign(process.env, s3.env, { AWS_ENDPOINT_URL_S3: s3.endpoint });
  api = scheduledApi(
    { apiKeyEnv: 'PIXELMILL_API_KEY' },
    {
      PIXELMILL_API_BASE_URL: emulator.url,
      PIXELMILL_API_KEY: DEMO_API_KEY,
    },
  );
  const receiver = await startLoopbackServer((_req, res, body) => {
    messages.push((JSON.parse(body.toString()) as { text: string }).text);
    res.writeHead(200).end('ok');
  });
  cleanups.push(() => receiver.close());
  process.env.NOTIFY_OPS = `${receiver.origin}/hook`;
  const runtime = createActivityRuntime({ apiBaseUrl: emulator.url, apiKey: DEMO_API_KEY, env: process.env });
  const workers = await createPixelmillWorkers({
    connection: harness.env.nativeConnection,
    namespace: 'default',
    queues: taskQueuesOf(api.account),
    activities: runtime.activities,
    shutdownGraceTime: '1 second',
  });
  const running = workers.run();
  cleanups.push(async () => {
    workers.shutdown();
    await running;
    await runtime.close();
  });
}, 120_000);

afterAll(async () => {
  for (const name of ['nightly', 'held'])
    await client?.schedule
      .getHandle(scheduleIdOf(name))
      .delete()
      .catch(() => undefined);
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('a schedule of a catalog in a bucket', () => {
  it('fires again and again: the first run generates the catalog, the next one only what was edited', async () => {
    await writeManifest();
    await writeItems(['p1,lamp one', 'p2,lamp two', 'p3,lamp three']);
    await createSchedule(client, {
      name: 'nightly',
      times: parseScheduleTimes({ every: '3s' }),
      input: {
        schedule: 'nightly',
        manifest: MANIFEST,
        api,
        // As `schedule create` takes them from the manifest: told when a firing cannot read it.
        notify: [{ urlEnv: 'NOTIFY_OPS', on: ['failed'] }],
        indexed: (await indexable(client)) === undefined,
      },
      catalog: 'nightly',
    });
    const started = (list: FiringView[]) =>
      list.filter(
        (firing) =>
          firing.outcome && firing.status === 'COMPLETED' && !/^nothing changed/.test(firing.outcome),
      );
    await waitUntil('the first run', async () => started(await firings('nightly')).length >= 1);
    expect(await tasks()).toBe(3);
    expect(parseReport(await text('nightly/out/report.jsonl')).map((line) => line.status)).toEqual([
      'completed',
      'completed',
      'completed',
    ]);

    // Tonight's export: one prompt edited, one product added.
    await writeItems(['p1,lamp one', 'p2,lamp two on oak', 'p3,lamp three', 'p4,lamp four']);
    const [, second] = await waitUntil('the run of the edited catalog', async () => {
      const list = started(await firings('nightly'));
      return list.length >= 2 ? list : undefined;
    });
    expect(second!.outcome).toBe('4 of 4 items completed; 2 credits');
    expect(await tasks()).toBe(5); // p2 and p4 only
    const report = parseReport(await text('nightly/out/report.jsonl'));
    expect(report.map((line) => [line.id, line.status])).toEqual([
      ['p1', 'completed'],
      ['p2', 'completed'],
      ['p3', 'completed'],
      ['p4', 'completed'],
    ]);
    // The runs' own notifications, from the manifest's notify: (the last one is the edited catalog's).
    expect(messages.filter((message) => message.includes('completed'))).toEqual([
      'pixelmill: pixelmill/nightly (schedule nightly) completed: 3 completed of 3; 3 credits',
      'pixelmill: pixelmill/nightly (schedule nightly) completed: 4 completed of 4; 2 credits',
    ]);
    const view = (await describeSchedule(client, 'nightly'))!;
    expect(view.firings).toBeGreaterThanOrEqual(2);
    expect(view.nextFiring).not.toBeNull();

    // `status` and `list` say which schedule started the run, and when it fires next.
    const status = await runStatus(client, 'pixelmill/nightly', undefined);
    expect(status).toMatchObject({ status: 'COMPLETED', schedule: { name: 'nightly', paused: false } });
    expect(Date.parse(status.schedule!.nextFiring!)).toBeGreaterThan(Date.parse(status.closeTime!));
    const [listed] = (await listRuns(client, 10)).filter((run) => run.runId === 'pixelmill/nightly');
    expect(listed!.schedule).toMatchObject({ name: 'nightly', paused: false });
  }, 120_000);

  it('fails a firing whose manifest is invalid, with the reason, and leaves the output alone', async () => {
    const before = await outputObjects();
    expect(before.length).toBeGreaterThan(4);
    const firedBefore = (await firings('nightly')).length;
    await writeManifest(['limits_typo: 3']);
    const failed = await waitUntil('a failed firing', async () =>
      (await firings('nightly')).find((firing) => firing.status === 'FAILED'),
    );
    expect(failed.outcome).toMatch(
      new RegExp(`^${MANIFEST}: 1 problem: ${MANIFEST}:\\d+:\\d+ .*limits_typo`),
    );
    expect(await outputObjects()).toEqual(before);
    // Told by the entries the manifest had when the schedule was made: it cannot be read now.
    const told = await waitUntil('the failed firing told', () =>
      messages.find((message) => message.includes('limits_typo')),
    );
    expect(told).toMatch(
      new RegExp(
        `^pixelmill: pixelmill-schedule/nightly-\\S+ \\(schedule nightly\\) failed\\. ${MANIFEST}: 1 problem: `,
      ),
    );
    expect(firedBefore).toBeGreaterThan(0);
    const lines = describeScheduleLines((await describeSchedule(client, 'nightly'))!);
    expect(lines.join('\n')).toContain(`failed: ${MANIFEST}: 1 problem`);

    const handle = await requireSchedule(client, 'nightly');
    await handle.pause();
    const paused = (await describeSchedule(client, 'nightly'))!;
    expect(paused).toMatchObject({ paused: true, nextFiring: null });
  }, 60_000);

  it('skips a firing while the last one still runs, and says so', async () => {
    // Runs of an account no worker serves: its firing stays running.
    const idle: ScheduledApi = {
      account: 'a0123456789abcdef',
      baseUrl: 'http://127.0.0.1:9',
      emulated: false,
    };
    await createSchedule(client, {
      name: 'held',
      times: parseScheduleTimes({ every: '1h' }),
      input: { schedule: 'held', manifest: MANIFEST, api: idle, indexed: false },
      catalog: 'nightly',
      paused: true,
    });
    await fireNow(client, 'held');
    await waitUntil('the first firing to run', async () => (await describeSchedule(client, 'held'))!.running);
    await fireNow(client, 'held');
    const view = await waitUntil('the second firing to be skipped', async () => {
      const described = (await describeSchedule(client, 'held'))!;
      return described.skippedOverlap > 0 ? described : undefined;
    });
    expect(view).toMatchObject({ firings: 1, skippedOverlap: 1, running: true });
    expect(describeScheduleLines(view)[1]).toBe(
      '  1 firing, 1 skipped while the last one still ran; one running now',
    );
    const [firing] = view.recent;
    await (await requireSchedule(client, 'held')).delete();
    await client.workflow.getHandle(firing!.workflowId).terminate('test over');
  });

  it('is what `pixelmill schedule create` makes: cron in a time zone, listed with its next firing', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      PIXELMILL_API_BASE_URL: emulator.url,
      PIXELMILL_API_KEY: DEMO_API_KEY,
    });
    const said: string[] = [];
    const written: string[] = [];
    const stderr = process.stderr.write.bind(process.stderr);
    const stdout = process.stdout.write.bind(process.stdout);
    process.stderr.write = ((chunk: string) => (said.push(chunk), true)) as typeof process.stderr.write;
    process.stdout.write = ((chunk: string) => (written.push(chunk), true)) as typeof process.stdout.write;
    const pixelmill = (...args: string[]) => buildProgram().parseAsync(['node', 'pixelmill', ...args]);
    try {
      await writeManifest();
      await pixelmill(
        'schedule',
        'create',
        MANIFEST,
        '--cron',
        '0 2 * * *',
        '--timezone',
        'Europe/Berlin',
        '--name',
        'berlin',
      );
      await pixelmill('schedule', 'list', '--json');
      await pixelmill('schedule', 'delete', 'berlin');
    } finally {
      process.stderr.write = stderr;
      process.stdout.write = stdout;
      process.env = saved;
    }
    expect(said[0]).toMatch(
      new RegExp(
        `^pixelmill: schedule berlin created on .*: cron "0 2 \\* \\* \\*" in Europe/Berlin, next firing \\S+; each firing runs what changed in ${MANIFEST} as pixelmill/nightly\n$`,
      ),
    );
    expect(said[1]).toBe(
      `pixelmill: firings are served by \`pixelmill worker\` with API account ${api.account} (${emulator.url}): keep one running\n`,
    );
    const listed = (
      JSON.parse(written.join('')) as { name: string; nextFiring: string; when: string }[]
    ).find((view) => view.name === 'berlin');
    // 02:00 in Berlin is 01:00 or 00:00 UTC, as daylight saving time says.
    expect(listed).toMatchObject({ when: 'cron "0 2 * * *" in Europe/Berlin', paused: false });
    expect(listed!.nextFiring).toMatch(/T0[01]:00:00\.000Z$/);
    expect(said.at(-1)).toBe('pixelmill: schedule berlin deleted\n');
    expect(await describeSchedule(client, 'berlin')).toBeUndefined();
  });
});
