// `pixelmill run` as a user runs it on a fresh machine: the embedded dev server, in-process
// workers and the emulator; report and images checked; a second run attaches instead of resubmitting.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSandbox, sha256File, type CliSandbox } from './support/cli.js';

let sandbox: CliSandbox;

beforeAll(async () => {
  sandbox = await cliSandbox();
  writeFileSync(
    join(sandbox.dir, 'emulator.yaml'),
    [
      'time_scale: 0.01',
      'rate_limits:',
      '  submit: { per_second: 1000, burst: 1000 }',
      '  query: { per_second: 1000, burst: 1000 }',
    ].join('\n'),
  );
  sandbox.env.PIXELMILL_EMULATOR_CONFIG = join(sandbox.dir, 'emulator.yaml');
  const items = Array.from(
    { length: 30 },
    (_, i) =>
      `  - { id: p${i}, prompt: "product ${i}", n: ${(i % 3) + 1}, size: "${i % 2 ? '16:9' : '1:1'}" }`,
  );
  writeFileSync(
    join(sandbox.dir, 'catalog.yaml'),
    ['name: embedded-test', 'limits: { requests_per_second: 100 }', 'output: ./out', 'items:', ...items].join(
      '\n',
    ),
  );
});
afterAll(async () => {
  await sandbox?.stop();
});

interface ReportLine {
  id: string;
  status: string;
  images: { path: string; sha256: string; bytes: number }[];
}

describe('pixelmill run (embedded)', () => {
  it('runs a manifest to the end: every image stored and matching its sha256, exit code 0', async () => {
    const result = await sandbox.run(['run', 'catalog.yaml', '--no-progress']);
    expect(result.stderr).toMatch(/started run pixelmill\/embedded-test/);
    expect(result.stderr).toMatch(/built-in emulator/);
    expect(result.code, result.stderr).toBe(0);

    const lines = readFileSync(join(sandbox.dir, 'out', 'report.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const report = lines.map((line) => JSON.parse(line) as ReportLine);
    expect(report.map((line) => line.id)).toEqual(Array.from({ length: 30 }, (_, i) => `p${i}`));
    expect(report.every((line) => line.status === 'completed')).toBe(true);
    const images = report.flatMap((line) => line.images);
    expect(images).toHaveLength(Array.from({ length: 30 }, (_, i) => (i % 3) + 1).reduce((a, b) => a + b, 0));
    for (const image of images) expect(sha256File(join(sandbox.dir, 'out', image.path))).toBe(image.sha256);

    const summary = JSON.parse(readFileSync(join(sandbox.dir, 'out', 'summary.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(summary).toMatchObject({
      manifest: 'embedded-test',
      run_id: 'pixelmill/embedded-test',
      emulated: true,
      images: images.length,
    });
  });

  it('running the same manifest again attaches to the finished run instead of submitting again', async () => {
    const result = await sandbox.run(['run', 'catalog.yaml', '--no-progress']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/found the finished run pixelmill\/embedded-test/);
    const status = await sandbox.run(['status', 'catalog.yaml', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({
      runId: 'pixelmill/embedded-test',
      status: 'COMPLETED',
    });
  });

  it('rejects an invalid manifest before anything starts, with file:line:col and exit code 1', async () => {
    writeFileSync(
      join(sandbox.dir, 'bad.yaml'),
      'name: bad\nitems:\n  - prompt: ok\n  - prompt: ""\n    size: wide\n',
    );
    const result = await sandbox.run(['run', 'bad.yaml']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/bad\.yaml:4:13 items\[1\]\.prompt: must not be empty/);
    expect(result.stderr).toMatch(/bad\.yaml:5:11 items\[1\]\.size: /);
    expect(result.stderr).not.toMatch(/at .*\.js:\d+/); // no stack trace
  });
});
