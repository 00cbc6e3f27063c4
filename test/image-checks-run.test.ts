// Checked images end to end: the built CLI (embedded dev server) against the real emulator over
// HTTP, which answers some tasks with wrong-aspect or blank images. Every stored image is decoded
// (real sharp): report.jsonl gives its format and size and a thumbnail beside the outputs, which
// the gallery shows; a failed check at `error` fails its item with ImageCheckFailed, which the
// retry policy regenerates when it names it (its charge counted), and at `warn` keeps it, said.
// Corrupt files and JPEGs served as PNG come from a second emulator.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReport, readSummary } from '../bench/catalog-audit.js';
import type { RunningEmulator } from '../emulator/index.js';
import { startTestEmulator } from './support/emulator.js';
import { cliSandbox, type CliSandbox } from './support/cli.js';

const ITEMS = 48;
let sandbox: CliSandbox;
let emulator: RunningEmulator;

function writeCatalog(name: string, extra: string[]): void {
  writeFileSync(
    join(sandbox.dir, `${name}.yaml`),
    [
      `name: ${name}`,
      'limits: { requests_per_second: 500 }',
      `output: ./${name}`,
      ...extra,
      'defaults: { size: "16:9" }',
      'items:',
      ...Array.from({ length: ITEMS }, (_, i) => `  - { id: p${i}, prompt: "${name} product ${i}" }`),
    ].join('\n'),
  );
}

const injected = (): Record<string, number> => emulator.injectedFaults();

beforeAll(async () => {
  emulator = await startTestEmulator({
    time_scale: 0.005,
    rate_limits: { submit: { per_second: 1000, burst: 1000 }, query: { per_second: 1000, burst: 1000 } },
    // A quarter each: with 48 items, both kinds occur in a run but for a one-in-a-million draw
    // (at 24, one run in a thousand drew no wrong-aspect image and failed the test).
    faults: { wrong_aspect_image_rate: 0.25, blank_image_rate: 0.25 },
  });
  sandbox = await cliSandbox({ PIXELMILL_API_BASE_URL: emulator.url, PIXELMILL_API_KEY: 'sk-live-demo' });
}, 60_000);

afterAll(async () => {
  await sandbox?.stop();
});

describe('checked images', () => {
  it('regenerates the items whose images fail a check the retry policy names, and says what it cost', async () => {
    writeCatalog('regenerated', ['retry: { max_attempts: 20, on: [ImageCheckFailed] }']);
    const before = injected();
    const run = await sandbox.run(['run', 'regenerated.yaml', '--no-progress'], { timeoutMs: 150_000 });
    expect(run.code, run.stderr).toBe(0);
    const after = injected();
    const faulty =
      after.wrong_aspect_image! - before.wrong_aspect_image! + (after.blank_image! - before.blank_image!);
    expect(faulty).toBeGreaterThan(0);
    const output = join(sandbox.dir, 'regenerated');
    const lines = readReport({ outputDir: output });
    expect(lines.every((line) => line.status === 'completed')).toBe(true);
    const attempts = lines.reduce((sum, line) => sum + line.attempts, 0);
    expect(attempts - ITEMS).toBe(faulty);
    for (const line of lines) {
      const [image] = line.images;
      expect(image).toMatchObject({ format: 'png', width: 1024, height: 576 });
      expect(image!.checks).toBeUndefined();
      const thumbnail = readFileSync(join(output, image!.thumbnail!));
      expect(await sharp(thumbnail).metadata()).toMatchObject({ format: 'jpeg', width: 320, height: 180 });
    }
    const summary = readSummary({ outputDir: output }) as unknown as {
      credits_charged: number;
      checks: { tasks_regenerated: number };
    };
    expect(summary.checks.tasks_regenerated).toBe(faulty);
    // The rejected tasks were charged: the summary counts them beside the report's.
    expect(summary.credits_charged).toBe(lines.reduce((sum, line) => sum + line.credits_cost, 0) + faulty);
    const gallery = readFileSync(join(output, 'index.html'), 'utf8');
    expect(gallery).toContain(`src="${lines[0]!.images[0]!.thumbnail}"`);
  }, 240_000);

  it('fails them with the check that failed when the policy does not, and keeps images at warn', async () => {
    writeCatalog('checked', ['checks: { blank: warn }']);
    const run = await sandbox.run(['run', 'checked.yaml', '--no-progress'], { timeoutMs: 150_000 });
    expect(run.code, run.stderr).toBe(3);
    const output = join(sandbox.dir, 'checked');
    const lines = readReport({ outputDir: output });
    const failed = lines.filter((line) => line.status === 'failed');
    const warned = lines.filter((line) => line.images[0]?.checks?.[0]?.level === 'warn');
    expect(failed.length).toBeGreaterThan(0);
    expect(warned.length).toBeGreaterThan(0);
    for (const line of failed) {
      expect(line.error).toMatchObject({ type: 'ImageCheckFailed', code: 'check_aspect_ratio' });
      expect(line.error!.message).toMatch(/^image 0 is 1024x1024, not 16:9$/);
      // The image stays stored, for a person to look at.
      expect(existsSync(join(output, line.images[0]!.path))).toBe(true);
    }
    for (const line of warned) {
      expect(line.status).toBe('completed');
      expect(line.images[0]!.checks).toEqual([expect.objectContaining({ check: 'blank', level: 'warn' })]);
    }
    const summary = readSummary({ outputDir: output }) as unknown as { checks: { failed: object } };
    expect(summary.checks.failed).toEqual({
      aspect_ratio: { error: failed.length, warn: 0 },
      blank: { error: 0, warn: warned.length },
    });
    expect(readFileSync(join(output, 'index.html'), 'utf8')).toContain('blank warn: is blank');
  }, 240_000);

  it('fails a corrupt image and a JPEG served as PNG with their checks, and regenerates them by policy', async () => {
    const other = await startTestEmulator({
      time_scale: 0.005,
      rate_limits: { submit: { per_second: 1000, burst: 1000 }, query: { per_second: 1000, burst: 1000 } },
      faults: { corrupt_image_rate: 0.25, jpeg_image_rate: 0.25 },
    });
    const env = { PIXELMILL_API_BASE_URL: other.url };
    writeCatalog('formats', ['checks: { format: error }']);
    const failing = await sandbox.run(['run', 'formats.yaml', '--no-progress'], { env, timeoutMs: 150_000 });
    expect(failing.code, failing.stderr).toBe(3);
    const faults = other.injectedFaults();
    expect(faults.corrupt_image).toBeGreaterThan(0);
    expect(faults.jpeg_image).toBeGreaterThan(0);
    const failed = readReport({ outputDir: join(sandbox.dir, 'formats') }).filter(
      (line) => line.status === 'failed',
    );
    const byCode = (code: string) => failed.filter((line) => line.error?.code === code);
    expect(byCode('check_decodes')).toHaveLength(faults.corrupt_image!);
    expect(byCode('check_format')).toHaveLength(faults.jpeg_image!);
    expect(byCode('check_format')[0]!.error!.message).toBe('image 0 is JPEG, announced as PNG');
    expect(failed).toHaveLength(faults.corrupt_image! + faults.jpeg_image!);

    writeCatalog('reformats', [
      'checks: { format: error }',
      'retry: { max_attempts: 20, on: [ImageCheckFailed] }',
    ]);
    const before = other.injectedFaults();
    const run = await sandbox.run(['run', 'reformats.yaml', '--no-progress'], { env, timeoutMs: 150_000 });
    expect(run.code, run.stderr).toBe(0);
    const after = other.injectedFaults();
    const faulty = after.corrupt_image! - before.corrupt_image! + (after.jpeg_image! - before.jpeg_image!);
    const lines = readReport({ outputDir: join(sandbox.dir, 'reformats') });
    expect(lines.every((line) => line.status === 'completed' && line.images[0]!.format === 'png')).toBe(true);
    expect(lines.reduce((sum, line) => sum + line.attempts, 0) - ITEMS).toBe(faulty);
  }, 240_000);

  it('generates chosen items again with redo, whatever their status, and refuses ids the run lacks', async () => {
    const output = join(sandbox.dir, 'checked');
    const before = new Map(readReport({ outputDir: output }).map((line) => [line.id, line]));
    const unknown = await sandbox.run(['redo', 'checked.yaml', '--ids', 'p1,nope'], { timeoutMs: 60_000 });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('pixelmill/checked has no item nope: nothing was started');
    const chosen = ['p0', 'p1'];
    const run = await sandbox.run(['redo', 'checked.yaml', '--ids', chosen.join(','), '--no-progress'], {
      timeoutMs: 150_000,
    });
    expect([0, 3]).toContain(run.code);
    expect(run.stderr).toMatch(
      /started pixelmill\/checked\/retry-\d+: 2 chosen items of pixelmill\/checked again/,
    );
    const after = readReport({ outputDir: output });
    for (const line of after) {
      const earlier = before.get(line.id)!;
      expect(line.attempts, line.id).toBe(earlier.attempts + (chosen.includes(line.id) ? 1 : 0));
    }
  }, 240_000);
});
