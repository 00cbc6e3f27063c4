// An S3 output end to end, through the built CLI (embedded dev server, built-in emulator) and a real
// S3-compatible server: `run` stores every completed item's images in the bucket and publishes
// report.jsonl, summary.json and the gallery beside them; `retry-failed` (the block lifted) stores
// the rest in the same bucket and prefix and republishes the report. Nothing lands on local disk
// but state and the report files before publishing. A store that fails a write once does not stop
// the CLI.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadManifest } from '../manifest/load.js';
import type { ReportLine } from '../report/report-line.js';
import { parseReport } from '../bench/catalog-audit.js';
import { cliSandbox, type CliSandbox } from './support/cli.js';
import { startS3Server, type S3TestServer } from '../bench/s3-server.js';

const BUCKET = 'shop';
const PREFIX = 'catalog/2026';
const ITEMS = 6;
/** Items whose prompt holds a blocked word: they fail (content policy) until the retry. */
const BLOCKED = new Set([1, 4]);

let server: S3TestServer;
let sandbox: CliSandbox;

function emulatorConfig(file: string, blockedWords: string[]): string {
  const path = join(sandbox.dir, file);
  writeFileSync(
    path,
    ['time_scale: 0.01', 'generation:', `  blocked_words: [${blockedWords.join(', ')}]`].join('\n'),
  );
  return path;
}

async function objectText(key: string): Promise<string> {
  const object = await server.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return object.Body!.transformToString();
}

async function report(): Promise<ReportLine[]> {
  return parseReport(await objectText(`${PREFIX}/report.jsonl`));
}

/** Every completed line's images are in the bucket with the sha256 the report gives. */
async function expectImagesInBucket(lines: ReportLine[]): Promise<void> {
  for (const line of lines.filter((entry) => entry.status === 'completed')) {
    expect(line.images.length).toBeGreaterThan(0);
    for (const image of line.images) {
      const head = await server.client.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${image.path}` }),
      );
      expect(head.Metadata?.sha256, image.path).toBe(image.sha256);
      expect(head.ContentType).toBe('image/png');
    }
  }
}

/** Item i of the catalog: a lamp, its prompt blocked for the items in BLOCKED. */
const lampItem = (i: number): string =>
  `  - { id: s${i}, prompt: "${BLOCKED.has(i) ? 'forbidden ' : ''}lamp ${i}" }`;

/** The catalog into the bucket, with more `output:` lines if given. */
function writeCatalog(items: string[], output: string[] = []): void {
  writeFileSync(
    join(sandbox.dir, 'catalog.yaml'),
    [
      'name: s3-test',
      'limits: { requests_per_second: 100 }',
      'output:',
      `  dir: s3://${BUCKET}/${PREFIX}`,
      `  endpoint: ${server.endpoint}`,
      '  force_path_style: true',
      ...output,
      'items:',
      ...items,
    ].join('\n'),
  );
}

beforeAll(async () => {
  server = await startS3Server();
  await server.createBucket(BUCKET);
  sandbox = await cliSandbox(server.env);
  sandbox.env.PIXELMILL_EMULATOR_CONFIG = emulatorConfig('emulator.yaml', ['forbidden']);
  writeCatalog(Array.from({ length: ITEMS }, (_, i) => lampItem(i)));
}, 60_000);

afterAll(async () => {
  await sandbox?.stop();
  await server?.stop();
});

describe('a run into s3://', () => {
  it('stores the images in the bucket and publishes the report files beside them', async () => {
    const run = await sandbox.run(['run', 'catalog.yaml', '--no-progress']);
    expect(run.code, run.stderr).toBe(3); // the blocked items failed
    expect(run.stderr).not.toMatch(/Warning/); // the AWS SDK's advice on Node versions is not for users
    const lines = await report();
    expect(lines.map((line) => [line.id, line.status])).toEqual(
      Array.from({ length: ITEMS }, (_, i) => [`s${i}`, BLOCKED.has(i) ? 'failed' : 'completed']),
    );
    await expectImagesInBucket(lines);
    const summary = JSON.parse(await objectText(`${PREFIX}/summary.json`)) as Record<string, unknown>;
    expect(summary).toMatchObject({ counts: { completed: ITEMS - BLOCKED.size, failed: BLOCKED.size } });
    expect(await objectText(`${PREFIX}/index.html`)).toContain('<html');

    // Locally: no image, no report, no run state: all of it is in the bucket.
    const localDir = join(sandbox.dir, '.pixelmill', 's3', BUCKET, ...PREFIX.split('/'));
    expect(existsSync(localDir) ? readdirSync(localDir, { recursive: true }) : []).toEqual([]);
    expect(
      await objectText(
        `${PREFIX}/.pixelmill/plan-${loadManifest(join(sandbox.dir, 'catalog.yaml')).hash.slice(0, 16)}.json`,
      ),
    ).toContain('"name": "s3-test"');
  }, 180_000);

  it('retry-failed stores the rest in the same bucket and prefix, and republishes the report', async () => {
    // The failures are content-policy refusals, which retry-failed skips unless told --all.
    const retry = await sandbox.run(['retry-failed', 'catalog.yaml', '--all', '--no-progress'], {
      env: { PIXELMILL_EMULATOR_CONFIG: emulatorConfig('unblocked.yaml', []) },
    });
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stderr).toMatch(
      /2 failed items of pixelmill\/s3-test again, into s3:\/\/shop\/catalog\/2026\n/,
    );
    expect(retry.stderr).toMatch(/report written: 6 completed, 0 failed/);
    const lines = await report();
    expect(lines.every((line) => line.status === 'completed')).toBe(true);
    expect(lines.filter((line) => line.attempts === 2).map((line) => line.id)).toEqual(
      [...BLOCKED].map((i) => `s${i}`),
    );
    await expectImagesInBucket(lines);

    // The retry kept its state beside the original's, in the bucket: two plans under one `.pixelmill`.
    const listed = await server.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: PREFIX }));
    const keys = (listed.Contents ?? []).map((object) => object.Key!);
    expect(keys.filter((key) => key.endsWith('.png'))).toHaveLength(ITEMS);
    const plans = keys.filter((key) => /^catalog\/2026\/\.pixelmill\/plan-[0-9a-f]{16}\.json$/.test(key));
    expect(plans).toHaveLength(2);
    expect(keys.filter((key) => key.includes('.pixelmill/.pixelmill'))).toEqual([]);
  }, 180_000);

  it('runs an edited catalog incrementally in the bucket: what changed generated, the rest copied', async () => {
    const before = new Map((await report()).map((line) => [line.id, line]));
    writeCatalog(
      Array.from({ length: ITEMS + 1 }, (_, i) =>
        i === 0 ? '  - { id: s0, prompt: "lamp 0, brass" }' : lampItem(i),
      ),
      ['  path_template: "v2/{id}_{index}.{ext}"'],
    );
    const run = await sandbox.run(['run', 'catalog.yaml', '--no-progress', '--prune'], {
      env: { PIXELMILL_EMULATOR_CONFIG: emulatorConfig('unblocked.yaml', []) },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      'pixelmill: plan: 2 items to generate (1 new, 1 changed, 0 gone for good), 5 unchanged (5 to copy to new paths)',
    );
    const lines = await report();
    expect(lines.map((line) => [line.id, line.reused_from === undefined])).toEqual(
      Array.from({ length: ITEMS + 1 }, (_, i) => [`s${i}`, i === 0 || i === ITEMS]),
    );
    for (const line of lines.filter((entry) => entry.reused_from !== undefined)) {
      expect(line.images.map((image) => image.sha256)).toEqual(
        before.get(line.id)!.images.map((image) => image.sha256),
      );
    }
    expect(lines.every((line) => line.images.every((image) => image.path.startsWith('v2/')))).toBe(true);
    await expectImagesInBucket(lines);
    const summary = JSON.parse(await objectText(`${PREFIX}/summary.json`)) as {
      catalog: Record<string, unknown>;
    };
    expect(summary.catalog).toMatchObject({ generated: 2, reused: 5, moved: 5, pruned: true });
    // Pruned: the old copies are gone, the bucket holds the catalog as it is now.
    const listed = await server.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: PREFIX }));
    const images = (listed.Contents ?? []).map((object) => object.Key!).filter((key) => key.endsWith('.png'));
    expect(images.sort()).toEqual(
      lines.flatMap((line) => line.images.map((image) => `${PREFIX}/${image.path}`)).sort(),
    );
  }, 180_000);

  it('tries a write again when the store fails it once (HTTP 500): the plan is frozen, the run completes', async () => {
    // Between the CLI and the store: the first write under .pixelmill/ (the plan) answers S3's
    // InternalError, the rest pass through, signed headers untouched.
    let failed = 0;
    const proxy = createServer((req, res) => {
      if (failed === 0 && req.method === 'PUT' && req.url?.includes('/.pixelmill/')) {
        failed++;
        req.resume();
        res.writeHead(500, { 'content-type': 'application/xml' });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>try again</Message></Error>',
        );
        return;
      }
      const upstream = httpRequest(
        new URL(req.url!, server.endpoint),
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const prefix = 'flaky/2026';
      writeFileSync(
        join(sandbox.dir, 'flaky.yaml'),
        [
          'name: s3-flaky',
          'limits: { requests_per_second: 100 }',
          'output:',
          `  dir: s3://${BUCKET}/${prefix}`,
          `  endpoint: http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
          '  force_path_style: true',
          'items:',
          '  - { id: f0, prompt: "flaky lamp 0" }',
          '  - { id: f1, prompt: "flaky lamp 1" }',
        ].join('\n'),
      );
      const run = await sandbox.run(['run', 'flaky.yaml', '--no-progress']);
      expect(run.code, run.stderr).toBe(0);
      expect(failed).toBe(1);
      const lines = parseReport(await objectText(`${prefix}/report.jsonl`));
      expect(lines.map((line) => line.status)).toEqual(['completed', 'completed']);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  }, 180_000);
});
