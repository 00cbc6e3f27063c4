// `pixelmill run` as a user runs it on a fresh machine: the embedded dev server, in-process
// workers and the emulator; report and images checked; a second run attaches instead of resubmitting.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSandbox, fastEmulatorConfig, sha256File, type CliSandbox } from './support/cli.js';
import { waitUntil } from './support/wait.js';

let sandbox: CliSandbox;

beforeAll(async () => {
  sandbox = await cliSandbox();
  Object.assign(sandbox.env, fastEmulatorConfig(sandbox, 0.01));
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
    // A state file cut short by a crash is only a hint to rebuild, never a failing run.
    const record = join(sandbox.dir, '.pixelmill', 'emulator.json');
    writeFileSync(record, '');
    const result = await sandbox.run(['run', 'catalog.yaml', '--no-progress']);
    expect(JSON.parse(readFileSync(record, 'utf8'))).toMatchObject({ port: expect.any(Number) });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/found the finished run pixelmill\/embedded-test/);
    const status = await sandbox.run(['status', 'catalog.yaml', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({
      runId: 'pixelmill/embedded-test',
      status: 'COMPLETED',
    });
  });

  it('resumes a run whose CLI was killed (SIGKILL): nothing lost, only in-flight submits repeated', async () => {
    // Slower generation and a modest rate, so the kill lands mid-run.
    const env = fastEmulatorConfig(sandbox, 0.05, 'slow.yaml');
    const items = Array.from({ length: 40 }, (_, i) => `  - { id: r${i}, prompt: "resumable ${i}" }`);
    writeFileSync(
      join(sandbox.dir, 'resume.yaml'),
      [
        'name: resume-test',
        'limits: { requests_per_second: 20 }',
        'output: ./resume-out',
        'items:',
        ...items,
      ].join('\n'),
    );

    const first = sandbox.spawn(['run', 'resume.yaml', '--no-progress'], env);
    let stderr = '';
    first.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // Kill once some items are at the API and none is finished: the worst moment.
    await waitUntil('the run to start', () => /started run pixelmill\/resume-test/.test(stderr), 60_000, 50);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    first.kill('SIGKILL');
    await new Promise((resolve) => first.on('close', resolve));

    const second = await sandbox.run(['run', 'resume.yaml', '--no-progress'], { env, timeoutMs: 180_000 });
    expect(second.stderr).toMatch(/attached to the running run pixelmill\/resume-test/);
    const reportText = readFileSync(join(sandbox.dir, 'resume-out', 'report.jsonl'), 'utf8');
    expect(
      second.code,
      `${second.stderr}\n${reportText
        .split('\n')
        .filter((line) => !line.includes('"completed"'))
        .join('\n')}`,
    ).toBe(0);
    const report = reportText
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ReportLine);
    expect(report).toHaveLength(40);
    expect(report.every((line) => line.status === 'completed')).toBe(true);
    for (const image of report.flatMap((line) => line.images))
      expect(sha256File(join(sandbox.dir, 'resume-out', image.path))).toBe(image.sha256);

    // The emulator's journal is the ground truth of what was submitted.
    const journal = readFileSync(join(sandbox.dir, '.pixelmill', 'emulator-tasks.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const prompts = journal
      .map((line) => (JSON.parse(line) as unknown[])[2] as string)
      .filter((prompt) => prompt.startsWith('resumable'));
    expect(new Set(prompts).size).toBe(40);
    // Only requests in flight at the kill may have been sent twice.
    expect(prompts.length - 40).toBeLessThanOrEqual(20);
  }, 150_000);

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
