// A run whose manifest says `output: s3://...`, through the real activities: the plan (frozen as
// the CLI does), the outcomes and the images all go to a real S3-compatible server (rclone serve
// s3), the images with their sha256; a second storeResults downloads nothing, the report files are
// published beside the images, a missing bucket is one clear line when the plan is frozen, and
// refused credentials fail the workers' activities at once (non-retryable).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, REPORT_FILE, SUMMARY_FILE } from '../activities/index.js';
import { apiCallCounts } from '../bench/catalog-audit.js';
import { UserError } from '../common/errors.js';
import { loadManifest } from '../manifest/load.js';
import {
  applicationFailure,
  completedTasks,
  inActivity,
  servedImage,
  writeManifest,
} from './activities-fixture.js';
import { expectNoSecrets } from './support/assertions.js';
import { ManualClock, startTestEmulator } from './support/emulator.js';
import { startS3Server, type S3TestServer } from '../bench/s3-server.js';
import { frozenPlan } from './support/plan.js';
import { RunStateRouter } from '../runstate/index.js';

const KEY = 'sk-live-s3-key';
const accounts = [{ id: 'acct_s3', keys: [{ key: KEY }] }];
const BUCKET = 'catalog';
let server: S3TestServer;

afterAll(async () => {
  await server?.stop();
});

beforeAll(async () => {
  server = await startS3Server();
  await server.createBucket(BUCKET);
});

/** The run of a manifest writing to `s3://<bucket>/runs/chairs`, its plan frozen by the CLI. */
function s3Manifest(bucket: string) {
  return writeManifest([
    'name: chairs',
    'output:',
    `  dir: s3://${bucket}/runs/chairs`,
    `  endpoint: ${server.endpoint}`,
    '  force_path_style: true',
    '  path_template: "{name}/{id}-{index}.{ext}"',
    'items:',
    '  - { id: oak, prompt: an oak chair, n: 2 }',
    '  - { id: pine, prompt: a pine chair }',
  ]);
}

/**
 * A prepared run writing to `s3://<bucket>/runs/chairs` whose two tasks have completed; `env` is
 * the workers' environment (the CLI that froze the plan has the server's credentials).
 */
async function completedS3Run(bucket = BUCKET, env: NodeJS.ProcessEnv = server.env) {
  const clock = new ManualClock();
  const emulator = await startTestEmulator({ accounts }, { clock });
  const fixture = s3Manifest(bucket);
  const frozen = await frozenPlan(fixture.file, new RunStateRouter({ s3: { env: server.env } }));
  // Credentials reach the store only through the worker's environment (the standard AWS chain).
  const activities = createActivities({ apiBaseUrl: emulator.url, apiKey: KEY, env });
  const { plan } = await activities.prepareRun({ plan: frozen });
  const requests = await completedTasks(activities, plan, clock, [0, 1]);
  return { emulator, fixture, activities, plan, input: { plan, shard: 0, items: requests } };
}

describe('a run with an S3 output', () => {
  it('keeps its state in the bucket, stores images there with their sha256, and publishes the report', async () => {
    const { emulator, fixture, activities, plan, input } = await completedS3Run();
    expect(plan.stateDir).toBe(`s3://${BUCKET}/runs/chairs/.pixelmill`);
    const localDir = join(fixture.dir, '.pixelmill');

    expect(await inActivity(activities.storeResults, input).result).toEqual({
      items: [
        { index: 0, status: 'completed', images: 2 },
        { index: 1, status: 'completed', images: 1 },
      ],
    });
    for (const [item, id, index] of [
      [0, 'oak', 0],
      [0, 'oak', 1],
      [1, 'pine', 0],
    ] as const) {
      const key = `runs/chairs/chairs/${id}-${index}.png`;
      const served = await servedImage(input.items[item]!.urls[index]!);
      const object = await server.client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
      expect(object.ContentType).toBe('image/png');
      expect(object.ContentLength).toBe(served.bytes);
      expect(object.Metadata).toEqual({
        sha256: served.sha256,
        'pixelmill-manifest': 'chairs',
        'pixelmill-item-id': id,
        'pixelmill-image-index': String(index),
      });
    }
    expect(existsSync(localDir)).toBe(false); // nothing on local disk: no image, no state

    // A new activity (no heartbeat): every image is already in the bucket, nothing is downloaded.
    const before = apiCallCounts(emulator.stats()).downloads;
    await inActivity(activities.storeResults, input).result;
    expect(apiCallCounts(emulator.stats()).downloads).toBe(before);

    await activities.writeReport({
      plan,
      runId: 'pixelmill/chairs',
      emulated: true,
      startedAt: '2026-05-01T11:00:00.000Z',
      apiCalls: { submit: 2, lookup: 0, get: 2 },
    });
    const report = await server.client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: `runs/chairs/${REPORT_FILE}` }),
    );
    const lines = (await report.Body!.transformToString()).trimEnd().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { id: string; status: string }).status)).toEqual([
      'completed',
      'completed',
    ]);
    // writeReport published all three files itself, beside the images.
    for (const file of [SUMMARY_FILE, 'index.html']) {
      const head = await server.client.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: `runs/chairs/${file}` }),
      );
      expect(head.ContentLength, file).toBeGreaterThan(0);
    }
  });

  it('cannot freeze the plan, in one line naming the bucket, when the bucket does not exist', async () => {
    const fixture = s3Manifest('missing-bucket');
    const refused = frozenPlan(fixture.file, new RunStateRouter({ s3: { env: server.env } }));
    await expect(refused).rejects.toMatchObject({
      name: 'StorageBucketMissingError',
      retryable: false,
      message: `s3://missing-bucket/runs/chairs: bucket "missing-bucket" does not exist at ${server.endpoint}`,
    });
  });

  it('fails prepareRun and storeResults, non-retryable, when the credentials are refused', async () => {
    const wrong = { ...server.env, AWS_SECRET_ACCESS_KEY: 'wrong-secret-for-this-key' };
    const expected =
      `s3://${BUCKET}/runs/chairs: the secret access key does not match the access key id at ` +
      `${server.endpoint} (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE)`;
    const atStart = await applicationFailure(completedS3Run(BUCKET, wrong));
    expect(atStart.type).toBe('StorageAccessDeniedError');
    expect(atStart.message).toBe(expected);
    // Credentials revoked mid-run: a worker with the wrong secret stores the planned results.
    const { input, emulator } = await completedS3Run(BUCKET);
    const worker = createActivities({ apiBaseUrl: emulator.url, apiKey: KEY, env: wrong });
    const failure = await applicationFailure(inActivity(worker.storeResults, input).result);
    expect(failure.type).toBe('StorageAccessDeniedError');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(expected);
    expectNoSecrets(
      [atStart, failure, failure.details],
      ['wrong-secret-for-this-key', server.secretAccessKey],
    );
  });
});

describe('manifest output: s3://', () => {
  function problems(output: string[]): readonly string[] {
    try {
      // writeManifest loads the manifest (for its hash): that is where it is refused.
      writeManifest(['name: m', ...output, 'items:', '  - { id: a, prompt: p }']);
    } catch (error) {
      expect(error).toBeInstanceOf(UserError);
      return (error as UserError).problems;
    }
    throw new Error('expected the manifest to be refused');
  }

  it("accepts a bare s3:// URL: bucket and prefix, the CLI's local folder beside the manifest", () => {
    const fixture = writeManifest([
      'name: m',
      'output: s3://my-bucket/a/b/',
      'items:',
      '  - { id: a, prompt: p }',
    ]);
    const { settings } = loadManifest(fixture.file);
    expect(settings.objectStore).toEqual({ bucket: 'my-bucket', prefix: 'a/b' });
    expect(settings.outputDir).toBe(join(fixture.dir, '.pixelmill', 's3', 'my-bucket', 'a', 'b'));
  });

  it("takes the CLI's local folder from output.local_dir when given (relative to the manifest)", () => {
    const fixture = writeManifest([
      'name: m',
      'output: { dir: "s3://my-bucket/a", local_dir: state/m }',
      'items:',
      '  - { id: a, prompt: p }',
    ]);
    const { settings } = loadManifest(fixture.file);
    expect(settings.objectStore).toEqual({ bucket: 'my-bucket', prefix: 'a' });
    expect(settings.outputDir).toBe(join(fixture.dir, 'state', 'm'));
  });

  it('refuses bad buckets and prefixes, S3 options on a local output, and credentials in the endpoint', () => {
    expect(problems(['output: s3://No_Such/x'])).toEqual([
      expect.stringMatching(/output: bucket "No_Such" is not a valid S3 bucket name/),
    ]);
    expect(problems(['output: s3://bucket/a/../b'])).toEqual([
      expect.stringMatching(/output: the key prefix "a\/..\/b" must not contain "." or ".." segments/),
    ]);
    expect(problems(['output: { dir: ./out, region: eu-west-1 }'])).toEqual([
      expect.stringMatching(/output.region: only applies to an s3:\/\/ output/),
    ]);
    expect(problems(['output: { dir: ./out, local_dir: ./state }'])).toEqual([
      expect.stringMatching(/output.local_dir: only applies to an s3:\/\/ output/),
    ]);
    expect(
      problems(['output: { dir: "s3://bucket", endpoint: "http://key:secret@127.0.0.1:9000" }']),
    ).toEqual([expect.stringMatching(/output.endpoint: must not contain credentials/)]);
  });
});
