// Image-to-image catalog runs end to end: the built CLI (embedded dev server) against the real
// emulator over HTTP (which downloads every reference at submit), with product photos as local
// files. Into a real S3-compatible server: each photo is uploaded once under the output prefix,
// the emulator fetches it by a presigned URL, and every stored image shows its photo. Into a
// local folder: the embedded reference server serves them. Bad references fail the manifest
// before anything is submitted, or, when only the provider can tell (a URL it cannot reach),
// fail their item with the API's error while the others complete.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseReport, readReport } from '../bench/catalog-audit.js';
import { startS3Server, type S3TestServer } from '../bench/s3-server.js';
import { referenceBox } from '../emulator/apimart/images/render.js';
import type { RunningEmulator } from '../emulator/index.js';
import { call, startTestEmulator } from './support/emulator.js';
import { cliSandbox, freePort, type CliSandbox } from './support/cli.js';

const BUCKET = 'refs';
const PREFIX = 'chairs';
const RED = [200, 30, 40];
const BLUE = [30, 60, 210];

let s3: S3TestServer;
let sandbox: CliSandbox;
let emulator: RunningEmulator;

async function photo(rgb: number[], format: 'png' | 'jpeg'): Promise<Buffer> {
  const image = sharp({
    create: { width: 120, height: 90, channels: 3, background: { r: rgb[0]!, g: rgb[1]!, b: rgb[2]! } },
  });
  return format === 'png' ? image.png().toBuffer() : image.jpeg({ quality: 95 }).toBuffer();
}

/** The colour at the centre of the box where a result shows its reference. */
async function referenceColour(png: Buffer): Promise<number[]> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const box = referenceBox(info.width, info.height);
  const at =
    (Math.round(box.y + box.side / 2) * info.width + Math.round(box.x + box.side / 2)) * info.channels;
  return [...data.subarray(at, at + 3)];
}

const near = (a: number[], b: number[]): boolean => a.every((value, k) => Math.abs(value - b[k]!) <= 12);

function writeCatalog(file: string, output: string[], items: string[]): void {
  writeFileSync(
    join(sandbox.dir, file),
    [
      `name: ${file.replace('.yaml', '')}`,
      'limits: { requests_per_second: 200 }',
      ...output,
      'items:',
      ...items,
    ].join('\n'),
  );
}

async function tasksAtApi(): Promise<number> {
  return (await call(emulator.url, '/_emulator/stats')).json.tasks_total as number;
}

beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket(BUCKET);
  emulator = await startTestEmulator({
    time_scale: 0.01,
    rate_limits: { submit: { per_second: 1000, burst: 1000 }, query: { per_second: 1000, burst: 1000 } },
  });
  sandbox = await cliSandbox({
    ...s3.env,
    PIXELMILL_API_BASE_URL: emulator.url,
    PIXELMILL_API_KEY: 'sk-live-demo',
  });
  mkdirSync(join(sandbox.dir, 'photos'));
  writeFileSync(join(sandbox.dir, 'photos', 'chair.png'), await photo(RED, 'png'));
  writeFileSync(join(sandbox.dir, 'photos', 'lamp.jpg'), await photo(BLUE, 'jpeg'));
  writeFileSync(join(sandbox.dir, 'photos', 'notes.txt'), 'not a photo');
}, 60_000);

afterAll(async () => {
  await sandbox?.stop();
  await s3?.stop();
});

describe('reference images from local files', () => {
  it('uploads each photo once to the bucket, which the emulator fetches by presigned URL; the results show it', async () => {
    writeCatalog(
      'catalog.yaml',
      [
        'output:',
        `  dir: s3://${BUCKET}/${PREFIX}`,
        `  endpoint: ${s3.endpoint}`,
        '  force_path_style: true',
      ],
      [
        '  - { id: red-chair, prompt: "the chair in a sunlit room", image_urls: [photos/chair.png] }',
        '  - { id: red-chair-2, prompt: "the chair on a terrace", image_urls: [photos/chair.png] }',
        '  - { id: blue-lamp, prompt: "the lamp at dusk", image_urls: ["photos/*.jpg", photos/chair.png] }',
        '  - { id: plain, prompt: "an empty room" }',
      ],
    );
    const before = (await call(emulator.url, '/_emulator/stats')).json.reference_images_fetched as number;
    const run = await sandbox.run(['run', 'catalog.yaml', '--no-progress'], { timeoutMs: 150_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("pixelmill: reference images: 2 put in the run's store, 0 already there");
    const listed = await s3.client.send(
      new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${PREFIX}/.pixelmill/references/` }),
    );
    const names = (listed.Contents ?? []).map((object) => object.Key!.replace(/^.*\//, ''));
    expect(names.map((name) => /^[0-9a-f]{64}\.(jpg|png)$/.exec(name)?.[1]).sort()).toEqual(['jpg', 'png']);
    // Four references submitted (the lamp's item has two), each downloaded by the emulator.
    expect((await call(emulator.url, '/_emulator/stats')).json.reference_images_fetched - before).toBe(4);
    const object = await s3.client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/report.jsonl` }),
    );
    const lines = parseReport(await object.Body!.transformToString());
    const expected: Record<string, number[] | undefined> = {
      'red-chair': RED,
      'red-chair-2': RED,
      'blue-lamp': BLUE,
      plain: undefined,
    };
    expect(lines.map((line) => [line.id, line.status])).toEqual(
      Object.keys(expected).map((id) => [id, 'completed']),
    );
    for (const line of lines) {
      const image = await s3.client.send(
        new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${line.images[0]!.path}` }),
      );
      const colour = await referenceColour(Buffer.from(await image.Body!.transformToByteArray()));
      const want = expected[line.id];
      expect(
        want ? near(colour, want) : near(colour, RED) || near(colour, BLUE),
        `${line.id}: ${colour.join(',')}`,
      ).toBe(want !== undefined);
    }
    // History and report carry content hashes, never the CLI's paths or a signed URL.
    const history = await sandbox.run(['status', 'catalog.yaml', '--json']);
    expect(history.stdout).not.toContain('photos/');
    expect(history.stdout).not.toContain('X-Amz-Signature');

    const again = await sandbox.run(['run', 'catalog.yaml', '--no-progress', '--new-run'], {
      timeoutMs: 150_000,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain("pixelmill: reference images: 0 put in the run's store, 2 already there");
  }, 240_000);

  it('serves them from a local output through the embedded reference server', async () => {
    writeCatalog(
      'local.yaml',
      ['output: ./out'],
      [
        '  - { id: chair, prompt: "the chair by a window", image_urls: [photos/chair.png] }',
        '  - { id: lamp, prompt: "the lamp on a desk", image_urls: [photos/lamp.jpg] }',
      ],
    );
    const run = await sandbox.run(['run', 'local.yaml', '--no-progress'], { timeoutMs: 150_000 });
    expect(run.code, run.stderr).toBe(0);
    const lines = readReport({ outputDir: join(sandbox.dir, 'out') });
    expect(lines.map((line) => line.status)).toEqual(['completed', 'completed']);
    for (const [line, want] of [
      [lines[0]!, RED],
      [lines[1]!, BLUE],
    ] as const) {
      const colour = await referenceColour(readFileSync(join(sandbox.dir, 'out', line.images[0]!.path)));
      expect(near(colour, want), `${line.id}: ${colour.join(',')}`).toBe(true);
    }
  }, 240_000);

  it('refuses a manifest with bad references before anything is submitted', async () => {
    const tasks = await tasksAtApi();
    const bad = [
      '  - { id: a, prompt: x, image_urls: [photos/missing.png] }',
      '  - { id: b, prompt: x, image_urls: [photos] }',
      '  - { id: c, prompt: x, image_urls: [photos/notes.txt] }',
    ];
    const sixteen = Array.from({ length: 16 }, () => 'photos/chair.png').join(', ');
    writeCatalog(
      'bad.yaml',
      ['output: ./bad-out'],
      [...bad, `  - { id: d, prompt: x, image_urls: [${sixteen}] }`],
    );
    const run = await sandbox.run(['run', 'bad.yaml', '--no-progress']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/bad\.yaml:\d+:\d+ items\[3\]\.image_urls: must have at most 15 entries/);
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    writeCatalog('bad.yaml', ['output: ./bad-out'], bad);
    const again = await sandbox.run(['run', 'bad.yaml', '--no-progress']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /bad\.yaml:\d+:\d+ items\[0\]\.image_urls\[0\]: photos\/missing\.png: file not found/,
    );
    expect(again.stderr).toMatch(/items\[1\]\.image_urls\[0\]: photos: is a folder/);
    expect(again.stderr).toMatch(/items\[2\]\.image_urls\[0\]: photos\/notes\.txt: is not an image/);
    expect(await tasksAtApi()).toBe(tasks);
  }, 60_000);

  it('fails the item whose reference URL the provider cannot reach, with its error, and completes the rest', async () => {
    const closed = await freePort();
    writeCatalog(
      'unreachable.yaml',
      ['output: ./unreachable-out'],
      [
        `  - { id: gone, prompt: "x", image_urls: ["http://127.0.0.1:${closed}/chair.png"] }`,
        '  - { id: fine, prompt: "y", image_urls: [photos/chair.png] }',
      ],
    );
    const run = await sandbox.run(['run', 'unreachable.yaml', '--no-progress'], { timeoutMs: 150_000 });
    expect(run.code, run.stderr).toBe(3);
    const [gone, fine] = readReport({ outputDir: join(sandbox.dir, 'unreachable-out') });
    expect(gone).toMatchObject({ id: 'gone', status: 'failed' });
    expect(gone!.error).toMatchObject({ type: 'BadRequestError', code: 'api_bad_request' });
    expect(gone!.error!.message).toContain(
      '400 image_url_unreachable: image_urls[0] could not be downloaded',
    );
    expect(fine).toMatchObject({ id: 'fine', status: 'completed' });
  }, 240_000);

  it('with a Temporal cluster and a local output, says how to host the photos before starting', async () => {
    writeCatalog(
      'cluster.yaml',
      ['output: ./cluster-out'],
      ['  - { id: chair, prompt: "x", image_urls: [photos/chair.png] }'],
    );
    const run = await sandbox.run(['run', 'cluster.yaml'], {
      env: { TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` },
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(
      /^pixelmill: 1 local reference image and a local output: with a Temporal cluster the provider cannot fetch them from this machine; use an s3:\/\/ output, or set output\.public_url \(or PIXELMILL_PUBLIC_URL\)/,
    );
  }, 60_000);
});
