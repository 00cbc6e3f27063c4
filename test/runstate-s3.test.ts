// Run state in an object store (runstate/s3.ts) on a real S3-compatible server: a plan frozen in
// parts and read back by range and by index, outcomes appended as objects and read in sequence
// order (a retried append replacing its first), the submit journal's lines created once, and a
// missing plan as one non-retryable failure naming where it looked.
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARD_SIZE } from '../common/names.js';
import { loadManifest } from '../manifest/load.js';
import { CLI_S3_ATTEMPTS } from '../client/run-files.js';
import { S3RunStateStore, type OutcomeLine } from '../runstate/index.js';
import { writeManifest } from './activities-fixture.js';
import { outcomeLine } from './support/plan.js';
import { startS3Server, type S3TestServer } from '../bench/s3-server.js';

const BUCKET = 'state';
let server: S3TestServer;
let store: S3RunStateStore;

beforeAll(async () => {
  server = await startS3Server();
  await server.createBucket(BUCKET);
  // Tried as the CLI tries what it writes itself (the plans): rclone answers a rare 500 to a PUT.
  store = new S3RunStateStore({ env: server.env, maxAttempts: CLI_S3_ATTEMPTS });
});
afterAll(async () => {
  store?.close();
  await server?.stop();
});

function manifest(prefix: string, items: number) {
  const fixture = writeManifest([
    'name: stored',
    `output: { dir: "s3://${BUCKET}/${prefix}", endpoint: "${server.endpoint}", force_path_style: true }`,
    'items:',
    ...Array.from(
      { length: items },
      (_, i) => `  - { id: item-${i}, prompt: "product ${i}", resolution: ${i % 2 ? '2K' : '1K'} }`,
    ),
  ]);
  return loadManifest(fixture.file);
}

const line = (index: number, status: OutcomeLine['status'], taskId: string): OutcomeLine =>
  outcomeLine(index, taskId, status);

async function keysUnder(prefix: string): Promise<string[]> {
  const listed = await server.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (listed.Contents ?? []).map((object) => object.Key ?? '').sort();
}

describe('run state in S3', () => {
  it('freezes a plan in parts under the output prefix and reads it by range and by index', async () => {
    const loaded = manifest('runs/big', 2 * SHARD_SIZE + 7);
    const { ref, meta } = await store.writePlan(loaded);
    expect(ref.stateDir).toBe(`s3://${BUCKET}/runs/big/.pixelmill`);
    expect(ref.objectStore).toMatchObject({ bucket: BUCKET, prefix: 'runs/big', endpoint: server.endpoint });
    const stem = `runs/big/.pixelmill/plan-${loaded.hash.slice(0, 16)}`;
    expect(await keysUnder('runs/big/')).toEqual([
      `${stem}.json`,
      `${stem}/items-000000.jsonl`,
      `${stem}/items-000001.jsonl`,
      `${stem}/items-000002.jsonl`,
    ]);
    expect(meta.shardCredits).toEqual([750, 750, 10]);

    // Another process (a worker elsewhere) reads it all back.
    const other = new S3RunStateStore({ env: server.env });
    try {
      const across = await other.readPlanItems(ref, { offset: SHARD_SIZE - 2, count: 4 });
      expect(across.items.map((item) => item.id)).toEqual([498, 499, 500, 501].map((i) => `item-${i}`));
      expect((await other.readPlanItem(ref, 2 * SHARD_SIZE + 6)).item.prompt).toBe(
        `product ${2 * SHARD_SIZE + 6}`,
      );
      expect((await other.readPlan(ref)).items).toHaveLength(2 * SHARD_SIZE + 7);
      await expect(other.readPlanItem(ref, 2 * SHARD_SIZE + 7)).rejects.toMatchObject({
        type: 'PlanIndexOutOfRange',
      });
    } finally {
      other.close();
    }
    // Freezing the same manifest again writes nothing.
    expect((await store.writePlan(loaded)).meta).toEqual(meta);
  });

  it('reads outcomes in sequence order, the last line for an item winning, and a retried append replacing its first', async () => {
    const loaded = manifest('runs/outcomes', 3);
    const { ref } = await store.writePlan(loaded);
    await store.appendOutcomes(ref, 0, [line(0, 'failed', 't0'), line(1, 'completed', 't1')], '0002');
    await store.appendOutcomes(ref, 0, [line(0, 'completed', 't0b')], '0003');
    // Written later by a clock that lags, but scheduled earlier: its sequence puts it first.
    await store.appendOutcomes(ref, 0, [line(2, 'failed', 't2')], '0001');
    // A retry of the activity that appended 0003 writes its lines again under the same sequence.
    await store.appendOutcomes(ref, 0, [line(0, 'completed', 't0b')], '0003');
    expect((await store.readOutcomes(ref, 0)).map((outcome) => outcome.task_id)).toEqual([
      't2',
      't0',
      't1',
      't0b',
    ]);
    const latest = await store.latestOutcomes(ref, loaded.items);
    expect(latest.map((outcome) => outcome?.task_id)).toEqual(['t0b', 't1', 't2']);
    // A batch asks only for its own items' lines.
    const batch = await store.readOutcomes(ref, 0, new Set([0, 2]));
    expect(batch.map((outcome) => outcome.task_id)).toEqual(['t2', 't0', 't0b']);
  });

  it('creates each journal line once and finds a call by its keys', async () => {
    const { ref } = await store.writePlan(manifest('runs/journal', 1));
    const first = { run: 'r1', activity: '7', task: 'task_a', at: 1 };
    await store.journalSubmit(ref, 'pixelmill/stored/shard-0001', first);
    // The same call again (a store that answers twice): the first line stays.
    await store.journalSubmit(ref, 'pixelmill/stored/shard-0001', { ...first, task: 'task_b', at: 2 });
    await store.journalSubmit(ref, 'pixelmill/stored/shard-0001', {
      ...first,
      at: 3,
      taken_over_at_attempt: 2,
    });
    await store.journalSubmit(ref, 'pixelmill/stored/shard-0001', {
      run: 'r1',
      activity: '70',
      task: 'task_c',
      at: 4,
    });
    const call = await store.readJournal(ref, 'pixelmill/stored/shard-0001', { run: 'r1', activity: '7' });
    expect(call.map((entry) => [entry.task, entry.taken_over_at_attempt])).toEqual([
      ['task_a', undefined],
      ['task_a', 2],
    ]);
    expect(await store.readJournal(ref, 'pixelmill/stored/shard-0001')).toHaveLength(3);
  });

  it('fails without retries, naming the store, when the plan is not there', async () => {
    const loaded = manifest('runs/missing', 1);
    const ref = {
      stateDir: `s3://${BUCKET}/runs/missing/.pixelmill`,
      planHash: loaded.hash,
      objectStore: loaded.settings.objectStore!,
    };
    const failure = (await store.readPlanMeta(ref).catch((error: unknown) => error)) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe('PlanMissing');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain(`s3://${BUCKET}/runs/missing/.pixelmill`);
  });
});
