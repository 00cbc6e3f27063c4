// `pixelmill emulator` as a user runs it: the compiled CLI starts, prints its URL, answers
// requests, and exits 0 on SIGTERM; a broken config file exits 1 with one line per problem.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call } from './support/emulator.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'pixelmill-emulator-cli-'));
const children: ChildProcess[] = [];

beforeAll(() => {
  // `npm test` builds once before vitest starts; rebuilding here would rewrite dist/ while other
  // test files' child processes import from it.
  if (!existsSync(join(root, 'dist/client/main.js'))) throw new Error('build first: npm run build');
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function run(args: string[]) {
  const child = spawn(process.execPath, ['bin/pixelmill.js', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const line = async (pattern: RegExp): Promise<RegExpExecArray> => {
    for (;;) {
      const match = pattern.exec(stdout);
      if (match) return match;
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return { child, exited, line, output: () => ({ stdout, stderr }) };
}

describe('pixelmill emulator', () => {
  it('prints its URL, serves the API with the configured keys, and exits 0 on SIGTERM', async () => {
    const config = join(dir, 'emulator.yaml');
    writeFileSync(
      config,
      'accounts:\n  - id: acct_cli\n    webhook_secret: whsec_cli_secret\n    keys: [{ key: sk-cli-secret-key }]\n',
    );
    const cli = run(['emulator', '--port', '0', '--config', config]);
    const url = (
      await cli.line(/pixelmill: apimart emulator listening on (http:\/\/127\.0\.0\.1:\d+)\n/)
    )[1]!;
    const submitted = await call(url, '/v1/images/generations', {
      key: 'sk-cli-secret-key',
      body: { prompt: 'from the cli' },
    });
    expect(submitted.status).toBe(200);
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
    const { stdout, stderr } = cli.output();
    expect(stdout).toContain('1 account(s), 1 API key(s)');
    expect(stdout + stderr).not.toMatch(/sk-cli-secret-key|whsec_cli_secret/);
  });

  it('prints the public demo key with the default accounts and stops on SIGINT', async () => {
    const cli = run(['emulator', '--port', '0', '--host', '127.0.0.1']);
    await cli.line(/demo API key: sk-live-demo/);
    cli.child.kill('SIGINT');
    expect(await cli.exited).toBe(0);
    expect(cli.output().stdout).not.toContain('whsec_demo');
  });

  it('exits 1 listing every config problem with file:line:col, without a stack trace', async () => {
    const config = join(dir, 'broken.yaml');
    writeFileSync(config, 'port: nope\ntime_scale: 0\nextra: 1\n');
    const cli = run(['emulator', '--config', config]);
    expect(await cli.exited).toBe(1);
    const lines = cli.output().stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^pixelmill: invalid emulator config .*broken\.yaml \(3 problems\)$/);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/broken\.yaml:1:7 port: /),
      expect.stringMatching(/broken\.yaml:2:13 time_scale: /),
      expect.stringMatching(/broken\.yaml:3:1 extra: unknown key$/),
    ]);
    expect(cli.output().stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 1 on a config error without printing a key written in the wrong place', async () => {
    const config = join(dir, 'misplaced-key.yaml');
    writeFileSync(config, 'accounts:\n  - id: acct_cli\n    keys:\n      - sk-cli-misplaced-key: active\n');
    const cli = run(['emulator', '--config', config]);
    expect(await cli.exited).toBe(1);
    const { stdout, stderr } = cli.output();
    expect(stderr).toMatch(/misplaced-key\.yaml:4:9 accounts\[0\]\.keys\[0\]: unknown key/);
    expect(stdout + stderr).not.toContain('sk-cli-misplaced-key');
  });

  it('rejects a bad --port', async () => {
    const cli = run(['emulator', '--port', 'eighty']);
    expect(await cli.exited).not.toBe(0);
    expect(cli.output().stderr).toMatch(/port/);
  });
});
