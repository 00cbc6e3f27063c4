// `pixelmill run` refuses an output it could not write, or one that would mix the run's images
// into someone else's files, with one line naming the folder and before anything is submitted.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSandbox, type CliSandbox } from './support/cli.js';

let sandbox: CliSandbox;

function manifest(name: string, output: string): string {
  const file = `${name}.yaml`;
  writeFileSync(
    join(sandbox.dir, file),
    [`name: ${name}`, `output: ${output}`, 'items:', '  - { prompt: a lamp }'].join('\n'),
  );
  return file;
}

beforeAll(async () => {
  sandbox = await cliSandbox();
  writeFileSync(join(sandbox.dir, 'emulator.yaml'), 'time_scale: 0.01\n');
  sandbox.env.PIXELMILL_EMULATOR_CONFIG = join(sandbox.dir, 'emulator.yaml');
});
afterAll(async () => {
  await sandbox?.stop();
});

/** Exit 1 and one line: said before a Temporal server, workers or an API came into it. */
function expectRefused(result: { code: number | null; stderr: string }, line: RegExp): void {
  expect(result.code).toBe(1);
  expect(result.stderr.trim()).toMatch(line);
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
}

describe('pixelmill run checks its output folder first', () => {
  it('refuses a folder that holds files pixelmill did not write, unless --force', async () => {
    mkdirSync(join(sandbox.dir, 'photos'));
    writeFileSync(join(sandbox.dir, 'photos', 'holiday.jpg'), 'not ours');
    const file = manifest('into-photos', './photos');
    expectRefused(
      await sandbox.run(['run', file, '--no-progress']),
      /^pixelmill: the output folder .*\/photos already holds 1 file that pixelmill did not write \(e\.g\. holiday\.jpg\): .*--force/,
    );
    const forced = await sandbox.run(['run', file, '--no-progress', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(existsSync(join(sandbox.dir, 'photos', 'holiday.jpg'))).toBe(true);
  });

  it('refuses a folder it cannot create, naming it', async () => {
    writeFileSync(join(sandbox.dir, 'a-file'), 'a file, not a folder');
    const file = manifest('blocked', './a-file/out');
    expectRefused(
      await sandbox.run(['run', file, '--no-progress']),
      /^pixelmill: cannot write the output folder .*\/a-file\/out: a file stands where a folder must be$/,
    );
  });
});
