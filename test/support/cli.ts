// Runs the built `pixelmill` CLI as a user would, in a sandbox: its own state folder (embedded
// Temporal dev server, emulator port) and free ports, torn down by `stop()`.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopDevServer } from '../../temporal/dev-server.js';
import { freePort } from '../../temporal/dev-server-process.js';

export const CLI = fileURLToPath(new URL('../../bin/pixelmill.js', import.meta.url));

export { freePort };

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliSandbox {
  dir: string;
  env: NodeJS.ProcessEnv;
  run(args: string[], options?: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<CliResult>;
  spawn(args: string[], env?: NodeJS.ProcessEnv): ChildProcess;
  stop(): Promise<void>;
}

export async function cliSandbox(extraEnv: NodeJS.ProcessEnv = {}): Promise<CliSandbox> {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-cli-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PIXELMILL_STATE_DIR: join(dir, '.pixelmill'),
    PIXELMILL_TEMPORAL_PORT: String(await freePort()),
    PIXELMILL_TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_ADDRESS: '',
    PIXELMILL_API_BASE_URL: '',
    ...extraEnv,
  };
  const spawnCli = (args: string[], more: NodeJS.ProcessEnv = {}): ChildProcess =>
    spawn(process.execPath, [CLI, ...args], {
      cwd: dir,
      env: { ...env, ...more },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  return {
    dir,
    env,
    spawn: (args, more) => spawnCli(args, more),
    run: (args, options = {}) => collectOutput(spawnCli(args, options.env), options.timeoutMs),
    async stop() {
      await stopDevServer(join(dir, '.pixelmill'));
    },
  };
}

/**
 * Gives the sandbox's built-in emulator a compressed clock and rate limits that never bind
 * (written to `<dir>/<file>`, named by PIXELMILL_EMULATOR_CONFIG); returns the env to use it.
 */
export function fastEmulatorConfig(
  sandbox: CliSandbox,
  timeScale: number,
  file = 'emulator.yaml',
): NodeJS.ProcessEnv {
  const path = join(sandbox.dir, file);
  writeFileSync(
    path,
    [
      `time_scale: ${timeScale}`,
      'rate_limits:',
      '  submit: { per_second: 1000, burst: 1000 }',
      '  query: { per_second: 1000, burst: 1000 }',
    ].join('\n'),
  );
  return { PIXELMILL_EMULATOR_CONFIG: path };
}

/** Waits for `child` to exit, with what it printed; killed after `timeoutMs`. */
export function collectOutput(child: ChildProcess, timeoutMs = 120_000): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

export function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}
