// S3ResultStore against a real S3-compatible server (rclone serve s3 on loopback), not a mock:
// objects land with their content type, sha256 and item metadata; an identical object is not
// uploaded again; a 4K image streams through with flat memory; a missing bucket and refused
// credentials fail with one clear line; report files are published beside the images.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageAccessDeniedError, StorageBucketMissingError } from '../storage/errors.js';
import { ResultStores } from '../storage/open-store.js';
import { publishReportFiles } from '../storage/publish.js';
import { UnsafeStoragePathError } from '../storage/result-store.js';
import { sha256OfFile } from '../storage/files.js';
import { S3ResultStore, type S3ResultStoreOptions } from '../storage/s3.js';
import type { S3Location } from '../storage/s3-location.js';
import { projectRoot } from '../temporal/binaries.js';
import { expectNoSecrets, rejection } from './support/assertions.js';
import { startS3Server, type S3TestServer } from '../bench/s3-server.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

const BUCKET = 'results';
let server: S3TestServer;
const stores: S3ResultStore[] = [];

afterAll(async () => {
  for (const store of stores.splice(0)) store.close();
  removeTempDirs();
  await server?.stop();
});

beforeAll(async () => {
  server = await startS3Server();
  await server.createBucket(BUCKET);
});

function location(prefix: string, bucket = BUCKET): S3Location {
  return { bucket, prefix, endpoint: server.endpoint, forcePathStyle: true };
}

function storeAt(prefix: string, options: Partial<S3ResultStoreOptions> = {}): S3ResultStore {
  const store = new S3ResultStore({
    location: location(prefix, options.location?.bucket),
    env: server.env,
    ...options,
  });
  stores.push(store);
  return store;
}

function smallPng(seed: number): Buffer {
  const png = new PNG({ width: 16, height: 16 });
  for (let i = 0; i < png.data.length; i++) png.data[i] = (i * seed) & 0xff;
  return PNG.sync.write(png);
}

function digest(bytes: Buffer): { sha256: string; bytes: number } {
  return { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
}

async function head(key: string) {
  return server.client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
}

async function objectBytes(key: string): Promise<Buffer> {
  const object = await server.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(await object.Body!.transformToByteArray());
}

describe('S3ResultStore', () => {
  it('uploads a stream under the prefix with its content type, sha256 and item metadata', async () => {
    const store = storeAt('runs/chairs');
    const image = smallPng(3);
    const stored = await store.put('oak/oak_0.png', Readable.from([image]), {
      'pixelmill-item-id': 'oak',
      'pixelmill-image-index': '0',
    });
    expect(stored).toEqual(digest(image));
    expect(store.location).toBe(`s3://${BUCKET}/runs/chairs`);

    const object = await head('runs/chairs/oak/oak_0.png');
    expect(object.ContentType).toBe('image/png');
    expect(object.ContentLength).toBe(image.length);
    expect(object.Metadata).toEqual({
      sha256: stored.sha256,
      'pixelmill-item-id': 'oak',
      'pixelmill-image-index': '0',
    });
    expect((await objectBytes('runs/chairs/oak/oak_0.png')).equals(image)).toBe(true);

    expect(await store.has('oak/oak_0.png', stored)).toBe(true);
    expect(await store.has('oak/oak_0.png', { ...stored, bytes: stored.bytes + 1 })).toBe(false);
    expect(await store.has('oak/oak_0.png', digest(smallPng(5)))).toBe(false);
    expect(await store.has('oak/missing.png', stored)).toBe(false);
    expect(store.counts).toEqual({ uploaded: 1, skipped: 0 });
  });

  it("hands put's reader the upload's spool, whole, and removes it after", async () => {
    const store = storeAt('with-file');
    const image = smallPng(13);
    let seen: { file: string; bytes: Buffer } | undefined;
    await store.put('b.png', Readable.from([image]), {}, async (file) => {
      seen = { file, bytes: readFileSync(file) };
    });
    expect(seen!.bytes.equals(image)).toBe(true);
    expect(existsSync(seen!.file)).toBe(false);
    // The reader's failure is put's.
    const failure = await rejection(
      store.put('c.png', Readable.from([image]), {}, () => Promise.reject(new Error('thumbnail refused'))),
    );
    expect(failure).toMatchObject({ message: 'thumbnail refused' });
  });

  it('does not upload again when the object already has the same sha256, and replaces a different one', async () => {
    const store = storeAt('skip');
    const image = smallPng(7);
    await store.put('a.png', Readable.from([image]), { 'pixelmill-item-id': 'first' });
    await store.put('a.png', Readable.from([image]), { 'pixelmill-item-id': 'second' });
    expect(store.counts).toEqual({ uploaded: 1, skipped: 1 });
    // The server still has the first upload's metadata: the second never reached it.
    expect((await head('skip/a.png')).Metadata?.['pixelmill-item-id']).toBe('first');

    const changed = smallPng(11);
    const stored = await store.put('a.png', Readable.from([changed]), { 'pixelmill-item-id': 'third' });
    expect(store.counts).toEqual({ uploaded: 2, skipped: 1 });
    expect((await head('skip/a.png')).Metadata).toMatchObject({
      sha256: stored.sha256,
      'pixelmill-item-id': 'third',
    });
    expect((await objectBytes('skip/a.png')).equals(changed)).toBe(true);
  });

  it('streams a 4K image (multipart) while the process memory grows far less than the image', async () => {
    const dir = tempDir();
    const file = join(dir, 'noise-4096.png');
    // The largest PNG a 4K image can be: 4096 x 4096 RGBA, 16 bits a channel, incompressible
    // noise (128 MiB). Made in a child process, so that building it does not grow this one.
    const made = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { PNG } from 'pngjs';
         import { randomFillSync } from 'node:crypto';
         import { writeFileSync } from 'node:fs';
         const png = new PNG({ width: 4096, height: 4096, bitDepth: 16 });
         png.data = randomFillSync(Buffer.alloc(4096 * 4096 * 8));
         writeFileSync(process.env.OUT, PNG.sync.write(png, { bitDepth: 16, deflateLevel: 0 }));`,
      ],
      { cwd: projectRoot(), env: { ...process.env, OUT: file }, encoding: 'utf8' },
    );
    expect(made.status, made.stderr).toBe(0);
    const size = statSync(file).size;
    expect(size).toBeGreaterThan(128 * 1024 * 1024); // 26 parts of 5 MiB

    const store = storeAt('big', { spoolDir: dir });
    // A first, smaller multipart upload: the SDK's code is loaded and the allocator holds a few
    // parts' worth of memory, the constant cost of any upload. What follows must not add to it
    // in proportion to the image.
    await store.put('warm-up.bin', Readable.from([randomBytes(16 * 1024 * 1024)]));
    // A full GC before each sample: the figure is what the upload holds, not garbage that V8 has
    // not collected yet (which, left alone, it lets grow by tens of MB whatever the file size).
    const gc = collector();
    gc();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sample = setInterval(() => {
      gc();
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 100);
    let stored;
    try {
      stored = await store.put('4k.png', createReadStream(file));
    } finally {
      clearInterval(sample);
    }
    const growth = peak - before;
    console.log(`4K upload: ${mib(size)} MiB file, peak RSS growth ${mib(growth)} MiB`);
    // Buffering the image whole would add at least its size (measured: +147 MiB); streaming
    // holds a few 5 MiB parts plus allocator noise (measured: +10 to +38 MiB).
    expect(growth).toBeLessThan(size / 2);

    const expected = { sha256: await sha256OfFile(file), bytes: size };
    expect(stored).toEqual(expected);
    const object = await head('big/4k.png');
    expect(object.ContentLength).toBe(size);
    expect(object.Metadata?.sha256).toBe(expected.sha256);
    expect(await store.has('4k.png', expected)).toBe(true);
  }, 180_000);

  it('says in one line that a bucket does not exist', async () => {
    const store = storeAt('x', { location: location('x', 'no-such-bucket') });
    const expected = `s3://no-such-bucket/x: bucket "no-such-bucket" does not exist at ${server.endpoint}`;
    const error = await rejection(store.put('a.png', Readable.from([smallPng(1)])));
    expect(error).toBeInstanceOf(StorageBucketMissingError);
    expect(error).toMatchObject({ message: expected, code: 'storage_bucket_missing', retryable: false });
    await expect(store.check()).rejects.toThrow(expected);
    await expect(store.putFile('b.png', writeTemp(smallPng(2)))).rejects.toThrow(expected);
  });

  it('says in one line that the credentials are refused, without showing them', async () => {
    const wrongSecret = 'not-the-secret-0123456789';
    const badSecret = storeAt('x', {
      env: { AWS_ACCESS_KEY_ID: server.accessKeyId, AWS_SECRET_ACCESS_KEY: wrongSecret },
    });
    const error = await rejection(badSecret.put('a.png', Readable.from([smallPng(1)])));
    expect(error).toBeInstanceOf(StorageAccessDeniedError);
    expect((error as Error).message).toBe(
      `s3://${BUCKET}/x: the secret access key does not match the access key id at ${server.endpoint} ` +
        '(check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE)',
    );
    expect(error).toMatchObject({ code: 'storage_access_denied', retryable: false });
    // Refused credentials are an error, not "the object is not there".
    await expect(badSecret.has('a.png', digest(smallPng(1)))).rejects.toBeInstanceOf(
      StorageAccessDeniedError,
    );
    const checked = await rejection(badSecret.check());
    expect(checked).toBeInstanceOf(StorageAccessDeniedError);
    expect((checked as Error).message).toBe((error as Error).message);

    const unknownKey = storeAt('x', {
      env: { AWS_ACCESS_KEY_ID: 'AKUNKNOWNKEY0000', AWS_SECRET_ACCESS_KEY: wrongSecret },
    });
    const unknown = await rejection(unknownKey.put('a.png', Readable.from([smallPng(1)])));
    expect((unknown as Error).message).toMatch(
      /: the access key id is not known at http:\/\/127\.0\.0\.1:\d+ \(check/,
    );
    expectNoSecrets([error, checked, unknown], [wrongSecret, server.secretAccessKey]);
  });

  it('refuses paths outside its prefix before reading the body', async () => {
    const store = storeAt('safe');
    for (const path of ['../escape.png', '/abs.png', 'a//b.png', 'a/./b.png', '']) {
      const body = Readable.from([smallPng(1)]);
      await expect(store.put(path, body)).rejects.toBeInstanceOf(UnsafeStoragePathError);
    }
  });

  it('takes credentials from the standard AWS environment (process.env), never from the location', async () => {
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
    const opened = new ResultStores();
    try {
      const store = opened.open({ outputDir: tempDir(), objectStore: location('from-env') });
      expect(store).toBeInstanceOf(S3ResultStore);
      expect(opened.open({ outputDir: tempDir(), objectStore: location('from-env') })).toBe(store);
      const image = smallPng(17);
      expect(await store.put('e.png', Readable.from([image]))).toEqual(digest(image));
      expect((await objectBytes('from-env/e.png')).equals(image)).toBe(true);
    } finally {
      opened.close();
      restore('AWS_ACCESS_KEY_ID', saved.id);
      restore('AWS_SECRET_ACCESS_KEY', saved.secret);
    }
  });

  it('publishes report files beside the images, and skips them when unchanged', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'report.jsonl'), '{"id":"oak","status":"completed"}\n');
    writeFileSync(join(dir, 'summary.json'), '{"items":1}\n');
    const store = storeAt('published');
    const names = ['report.jsonl', 'summary.json', 'index.html'];
    const published = await publishReportFiles(store, dir, names);
    expect(published.map((file) => file.location)).toEqual([
      `s3://${BUCKET}/published/report.jsonl`,
      `s3://${BUCKET}/published/summary.json`,
    ]);
    expect((await head('published/report.jsonl')).ContentType).toBe('application/x-ndjson');
    expect((await head('published/summary.json')).ContentType).toBe('application/json');
    expect((await objectBytes('published/summary.json')).toString()).toBe('{"items":1}\n');

    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>gallery</title>\n');
    await publishReportFiles(store, dir, names);
    expect(store.counts).toEqual({ uploaded: 3, skipped: 2 });
    expect((await head('published/index.html')).ContentType).toBe('text/html; charset=utf-8');
  });
});

function writeTemp(bytes: Buffer): string {
  const file = join(tempDir(), 'file.png');
  writeFileSync(file, bytes);
  return file;
}

/** The GC, callable from this process (the test runner does not start node with --expose-gc). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function mib(bytes: number): string {
  return (bytes / 1048576).toFixed(1);
}

function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
