// Manifests in an object store (issue 42), against a real S3-compatible server: a manifest read
// from `s3://` means what the same files mean on disk (its items_file and photos relative to it,
// the same hash, so the same run), its problems name s3:// URLs, and what cannot be meant there (a
// folder output relative to the bucket, a missing object) is one line. Then `pixelmill run
// s3://...` itself, in this process, with the embedded dev server and emulator.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseReport } from '../bench/catalog-audit.js';
import { startS3Server, type S3TestServer } from '../bench/s3-server.js';
import { buildProgram } from '../client/program.js';
import { isUserError, type UserError } from '../common/errors.js';
import { loadManifest } from '../manifest/load.js';
import { loadManifestAt } from '../manifest/store-source.js';
import { stopDevServer } from '../temporal/dev-server.js';
import { freePort } from '../temporal/dev-server-process.js';

const BUCKET = 'exports';
let s3: S3TestServer;
let local: string;
let env: NodeJS.ProcessEnv;

/** Each file into the bucket under `cat/`, and into a local folder as the same tree. */
async function publish(files: Record<string, string | Buffer>): Promise<void> {
  for (const [path, body] of Object.entries(files)) {
    await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `cat/${path}`, Body: body }));
    mkdirSync(dirname(join(local, path)), { recursive: true });
    writeFileSync(join(local, path), body);
  }
}

const manifest = (output: string, extra: string[] = []) =>
  [
    'name: bucket-catalog',
    'limits: { requests_per_second: 200 }',
    output,
    'items_file: data/items.csv',
    'defaults: { image_urls: ["photos/*.png"] }',
    ...extra,
  ].join('\n');

async function refusal(location: string): Promise<UserError> {
  try {
    await loadManifestAt(location, { env });
  } catch (error) {
    if (isUserError(error)) return error;
    throw error;
  }
  throw new Error(`${location} loaded`);
}

beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket(BUCKET);
  local = mkdtempSync(join(tmpdir(), 'pixelmill-manifest-s3-'));
  env = { ...process.env, ...s3.env, AWS_ENDPOINT_URL_S3: s3.endpoint };
  const photo = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#7a6' } })
    .png()
    .toBuffer();
  await publish({
    'catalog.yaml': manifest(
      `output: { dir: "s3://${BUCKET}/cat/out", endpoint: "${s3.endpoint}", force_path_style: true }`,
    ),
    'data/items.csv': 'id,prompt\nlamp,a brass lamp\nchair,an oak chair\n',
    'photos/ref.png': photo,
    'local-output.yaml': manifest('output: ./out'),
    'bad.yaml': manifest('output: s3://exports/cat/out', ['budget: 3']),
  });
}, 60_000);

afterAll(async () => {
  await s3?.stop();
  if (local) rmSync(local, { recursive: true, force: true });
});

describe('a manifest in a bucket', () => {
  it('is the manifest its files make on disk: items_file and photos beside it, the same hash', async () => {
    const at = await loadManifestAt(`s3://${BUCKET}/cat/catalog.yaml`, { env, cwd: '/srv/cli' });
    try {
      const onDisk = loadManifest(join(local, 'catalog.yaml'));
      expect(at.manifest.hash).toBe(onDisk.hash);
      expect(at.manifest.items.map((item) => [item.id, item.prompt, item.image_urls])).toEqual(
        onDisk.items.map((item) => [item.id, item.prompt, item.image_urls]),
      );
      expect(at.manifest.references.map((ref) => ref.uri)).toEqual(onDisk.references.map((ref) => ref.uri));
      expect(at.manifest.settings).toMatchObject({
        manifestFile: `s3://${BUCKET}/cat/catalog.yaml`,
        objectStore: { bucket: BUCKET, prefix: 'cat/out' },
        // The CLI's own records of an S3 output: in the folder it runs in.
        outputDir: '/srv/cli/.pixelmill/s3/exports/cat/out',
      });
    } finally {
      await at.release();
    }
  });

  it('names its problems by their s3:// URLs', async () => {
    await publish({ 'data/items.csv': 'id,prompt\nlamp,a brass lamp\nlamp,again\n' });
    try {
      const error = await refusal(`s3://${BUCKET}/cat/catalog.yaml`);
      expect(error.problems.join('\n')).toMatch(/^s3:\/\/exports\/cat\/data\/items\.csv:3:\d+ .*lamp/m);
      expect(error.problems.join('\n')).not.toContain(tmpdir());
    } finally {
      await publish({ 'data/items.csv': 'id,prompt\nlamp,a brass lamp\nchair,an oak chair\n' });
    }
    const unknown = await refusal(`s3://${BUCKET}/cat/bad.yaml`);
    expect(unknown.message).toBe('s3://exports/cat/bad.yaml: 1 problem');
    expect(unknown.problems[0]).toMatch(/^s3:\/\/exports\/cat\/bad\.yaml:6:1 budget/);
  });

  it('refuses what a bucket cannot mean, in one line', async () => {
    expect((await refusal(`s3://${BUCKET}/cat/local-output.yaml`)).message).toBe(
      's3://exports/cat/local-output.yaml: its output is a folder relative to the bucket: a manifest in a bucket needs an s3:// output (or an absolute folder every worker shares)',
    );
    expect((await refusal(`s3://${BUCKET}/cat/none.yaml`)).message).toBe(
      's3://exports/cat/none.yaml: no such object in the bucket',
    );
    expect((await refusal(`s3://${BUCKET}/cat/`)).message).toMatch(/names a bucket or a folder/);
  });
});

/** The CLI's standard output for `args`, with the bucket's environment. */
async function cliOutput(args: string[]): Promise<string> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  const stdout = process.stdout.write.bind(process.stdout);
  let said = '';
  process.stdout.write = ((chunk: string) => ((said += chunk), true)) as typeof process.stdout.write;
  try {
    await buildProgram().parseAsync(['node', 'pixelmill', ...args]);
  } finally {
    process.stdout.write = stdout;
    process.env = saved;
  }
  return said;
}

describe('pixelmill validate and plan s3://', () => {
  it('check and plan it as they do a file, its items_file read beside it', async () => {
    const url = `s3://${BUCKET}/cat/catalog.yaml`;
    expect(await cliOutput(['validate', url])).toBe(
      `pixelmill: ${url}: valid: "bucket-catalog", 2 items, 2 images\n`,
    );
    // Before the run below: nothing stored yet, both to generate.
    const plan = JSON.parse(await cliOutput(['plan', url, '--json'])) as { items: number; generate: number };
    expect([plan.items, plan.generate]).toEqual([2, 2]);
  });
});

describe('pixelmill run s3://', () => {
  it('runs it as it runs a file: images and report in the output, photos in its store', async () => {
    const stateDir = join(local, '.pixelmill-state');
    const saved = { ...process.env };
    Object.assign(process.env, env, {
      PIXELMILL_STATE_DIR: stateDir,
      PIXELMILL_TEMPORAL_PORT: String(await freePort()),
      PIXELMILL_TEMPORAL_UI_PORT: String(await freePort()),
      TEMPORAL_ADDRESS: '',
      PIXELMILL_API_BASE_URL: '',
    });
    const cwd = process.cwd();
    process.chdir(local);
    const stderr = process.stderr.write.bind(process.stderr);
    let said = '';
    process.stderr.write = ((chunk: string) => ((said += chunk), true)) as typeof process.stderr.write;
    try {
      await buildProgram().parseAsync([
        'node',
        'pixelmill',
        'run',
        `s3://${BUCKET}/cat/catalog.yaml`,
        '--no-progress',
      ]);
    } finally {
      process.stderr.write = stderr;
      process.chdir(cwd);
      await stopDevServer(stateDir);
      process.env = saved;
    }
    expect(process.exitCode, said).toBe(0);
    process.exitCode = undefined;
    expect(said).toMatch(/started run pixelmill\/bucket-catalog \(2 items\)/);
    const report = await s3.client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: 'cat/out/report.jsonl' }),
    );
    const lines = parseReport(await report.Body!.transformToString());
    expect(lines.map((line) => [line.id, line.status])).toEqual([
      ['lamp', 'completed'],
      ['chair', 'completed'],
    ]);
    // The photo beside the manifest went to the run's store, where the provider was given it.
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'cat/out/' }));
    const photos = (listed.Contents ?? [])
      .map((object) => object.Key!)
      .filter((key) => /references\//.test(key));
    expect(photos).toEqual([expect.stringMatching(/^cat\/out\/\.pixelmill\/references\/[0-9a-f]{64}\.png$/)]);
  }, 180_000);
});
