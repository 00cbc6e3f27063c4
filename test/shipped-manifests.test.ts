// Both manifests shipped in manifests/ run as they are (issue #12 section 5): copied with their
// items file into a sandbox, so that their relative output folders land there and not in the
// checkout, and run by the built CLI with nothing configured (the built-in emulator).
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSandbox, fastEmulatorConfig, type CliSandbox } from './support/cli.js';

const MANIFESTS = fileURLToPath(new URL('../manifests/', import.meta.url));

let sandbox: CliSandbox;
beforeAll(async () => {
  sandbox = await cliSandbox();
  Object.assign(sandbox.env, fastEmulatorConfig(sandbox, 0.01));
  mkdirSync(join(sandbox.dir, 'manifests'));
  for (const file of ['demo.yaml', 'catalog-example.yaml', 'catalog-example.csv'])
    copyFileSync(join(MANIFESTS, file), join(sandbox.dir, 'manifests', file));
});
afterAll(async () => {
  await sandbox?.stop();
});

describe('the shipped manifests', () => {
  it.each([
    ['demo.yaml', 'demo'],
    ['catalog-example.yaml', 'spring-catalog-2027'],
  ])(
    '%s runs as it is: every item completed, exit code 0',
    async (file, name) => {
      const result = await sandbox.run(['run', join('manifests', file), '--no-progress'], {
        timeoutMs: 240_000,
      });
      expect(result.code, result.stderr).toBe(0);
      const summary = JSON.parse(readFileSync(join(sandbox.dir, 'out', name, 'summary.json'), 'utf8')) as {
        items: number;
        counts: { completed: number };
        emulated: boolean;
      };
      expect(summary.counts.completed).toBe(summary.items);
      expect(summary.items).toBeGreaterThan(10);
      expect(summary.emulated).toBe(true);
    },
    300_000,
  );
});
