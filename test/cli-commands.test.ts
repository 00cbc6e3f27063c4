// The operator commands end to end, through the built CLI in a sandbox (embedded dev server,
// in-process workers, the built-in emulator): one small run with content-blocked items, then
// list, status --json, retry-failed (with the block lifted) and report against it.
import { readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ReportLine } from '../report/report-line.js';
import { readReport } from '../bench/catalog-audit.js';
import { EXIT_CODES } from '../client/exit-codes.js';
import { main as cliMain } from '../client/program.js';
import { cliSandbox, sha256File, type CliResult, type CliSandbox } from './support/cli.js';

const ITEMS = 12;
/** Items whose prompt holds the emulator's default blocked word: they fail (content policy). */
const BLOCKED = new Set([2, 7, 11]);
const RUN_ID = 'pixelmill/cli-test';

let sandbox: CliSandbox;
let first: CliResult;
const out = (...parts: string[]): string => join(sandbox.dir, 'out', ...parts);
const report = (): ReportLine[] => readReport({ outputDir: out() });

function emulatorConfig(file: string, blockedWords: string[]): string {
  const path = join(sandbox.dir, file);
  writeFileSync(
    path,
    [
      'time_scale: 0.01',
      'rate_limits:',
      '  submit: { per_second: 1000, burst: 1000 }',
      '  query: { per_second: 1000, burst: 1000 }',
      'generation:',
      `  blocked_words: [${blockedWords.join(', ')}]`,
    ].join('\n'),
  );
  return path;
}

beforeAll(async () => {
  sandbox = await cliSandbox();
  sandbox.env.PIXELMILL_EMULATOR_CONFIG = emulatorConfig('emulator.yaml', ['forbidden']);
  const items = Array.from(
    { length: ITEMS },
    (_, i) =>
      `  - { id: c${i}, prompt: "${BLOCKED.has(i) ? 'forbidden ' : ''}chair ${i}", n: ${(i % 2) + 1} }`,
  );
  writeFileSync(
    join(sandbox.dir, 'catalog.yaml'),
    ['name: cli-test', 'limits: { requests_per_second: 100 }', 'output: ./out', 'items:', ...items].join(
      '\n',
    ),
  );
  first = await sandbox.run(['run', 'catalog.yaml', '--no-progress']);
}, 180_000);
afterAll(async () => {
  await sandbox?.stop();
});

/**
 * `pixelmill <args>` in this process: the CLI's own entry (what client/main.ts runs), with what it
 * writes to stdout captured, and its exit code. Only for commands that print and return.
 */
async function runInProcess(args: string[]): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  try {
    const code = await cliMain(['node', 'pixelmill', ...args]);
    return { code, stdout };
  } finally {
    write.mockRestore();
  }
}

describe('the run the other commands look at', () => {
  it('ends with exit code 3 (items failed) and plain progress lines on a pipe', () => {
    expect(first.code, first.stderr).toBe(3);
    expect(first.stderr).toMatch(/pixelmill\/cli-test \(emulated\): \w+ · \d+\/12 final · queued \d+ /);
    expect(first.stderr).toMatch(
      / · requests (--|[\d.]+)\/s( \(30 s avg\))? of 100\/s · images (--|[\d.]+)\/min · ETA /,
    );
    expect(first.stderr).toMatch(/: finished · 12\/12 final .* completed 9 · failed 3 .* ETA done/);
    expect(first.stderr).not.toContain('\x1b'); // no escape codes in a log
    // The end: what did not complete, by status and error, with the first ids; and where to look.
    expect(first.stderr).toContain('pixelmill: cli-test: 9 of 12 items completed, 3 failed; ');
    expect(first.stderr).toMatch(
      /pixelmill: not completed, by status and error type\/code:\npixelmill: {3}3 failed content_policy_violation\/content_blocked: c\d+, c\d+, c\d+\n/,
    );
    expect(first.stderr).toContain(`pixelmill: gallery ${join(sandbox.dir, 'out', 'index.html')}`);
  });
});

describe('pixelmill list', () => {
  it('shows the run with its status and counts', async () => {
    const listed = await sandbox.run(['list']);
    expect(listed.code, listed.stderr).toBe(0);
    const [header, ...rows] = listed.stdout.trim().split('\n');
    expect(header).toMatch(/^RUN\s+STATUS\s+STARTED\s+ITEMS\s+COMPLETED\s+FAILED\s+CREDITS$/);
    const row = rows.find((line) => line.startsWith(`${RUN_ID} `));
    expect(row).toMatch(
      /^pixelmill\/cli-test \(emulated\)\s+completed\s+\d{4}-\d\d-\d\d [\d:]{8}\s+12\s+9\s+3\s+\d+$/,
    );
  });

  it('--json gives the same as data', async () => {
    const listed = await sandbox.run(['list', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const runs = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(runs.find((run) => run.runId === RUN_ID)).toMatchObject({
      status: 'COMPLETED',
      emulated: true,
      items: ITEMS,
      completed: 9,
      failed: 3,
    });
  });
});

describe('pixelmill status --json', () => {
  it('reads a finished run from its report', async () => {
    const status = await sandbox.run(['status', 'catalog.yaml', '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      runId: RUN_ID,
      status: 'COMPLETED',
      state: null,
      items: ITEMS,
      counts: { completed: 9, failed: 3, queued: 0, submitted: 0, storing: 0 },
      source: 'report',
      report: out('report.jsonl'),
      retries: [],
    });
  });
});

describe('pixelmill retry-failed', () => {
  it('runs only the failed items again, into the same folder, and rewrites the report', async () => {
    const before = report();
    const failedIds = before.filter((line) => line.status === 'failed').map((line) => line.id);
    expect(failedIds).toEqual([...BLOCKED].map((i) => `c${i}`));

    // Blocked prompts cannot succeed again: only --all retries them (here the block is lifted).
    const retry = await sandbox.run(['retry-failed', 'cli-test', '--all', '--no-progress'], {
      env: { PIXELMILL_EMULATOR_CONFIG: emulatorConfig('unblocked.yaml', []) },
    });
    expect(retry.code, retry.stderr).toBe(0);
    expect(retry.stderr).toMatch(
      /started pixelmill\/cli-test\/retry-1: 3 failed items of pixelmill\/cli-test/,
    );
    expect(retry.stderr).toMatch(/report written: 12 completed, 0 failed/);

    const derived = readFileSync(out('.pixelmill', 'retry-1.yaml'), 'utf8');
    expect(derived.match(/^ {2}- id: /gm)).toHaveLength(3);

    const after = report();
    expect(after.map((line) => line.id)).toEqual(before.map((line) => line.id));
    for (const [index, line] of after.entries()) {
      expect(line.status).toBe('completed');
      if (BLOCKED.has(index)) {
        // One submission that was blocked, one that worked.
        expect(line.attempts).toBe(2);
        expect(line.task_id).not.toBe(before[index]!.task_id);
      } else {
        expect(line).toEqual(before[index]); // untouched
      }
      for (const image of line.images) expect(sha256File(out(image.path))).toBe(image.sha256);
    }
    const summary = JSON.parse(readFileSync(out('summary.json'), 'utf8')) as Record<string, unknown>;
    expect(summary).toMatchObject({
      run_id: RUN_ID,
      items: ITEMS,
      counts: { completed: ITEMS, failed: 0 },
    });

    const status = await sandbox.run(['status', RUN_ID, '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({
      counts: { completed: ITEMS, failed: 0 },
      retries: [{ runId: `${RUN_ID}/retry-1`, items: 3, inReport: true }],
    });
    const listed = JSON.parse((await sandbox.run(['list', '--json'])).stdout) as { runId: string }[];
    expect(listed.map((run) => run.runId)).toContain(`${RUN_ID}/retry-1`);
  }, 180_000);

  it('says there is nothing to retry once nothing has failed', async () => {
    const again = await sandbox.run(['retry-failed', 'catalog.yaml']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/has no failed items: nothing to retry/);
    expect(existsSync(out('.pixelmill', 'retry-2.yaml'))).toBe(false);
  });
});

describe('pixelmill report', () => {
  it('rewrites report.jsonl, summary.json and the gallery from what is stored, retries included', async () => {
    const report = readFileSync(out('report.jsonl'), 'utf8');
    const summary = JSON.parse(readFileSync(out('summary.json'), 'utf8')) as Record<string, unknown>;
    rmSync(out('report.jsonl'));
    rmSync(out('summary.json'));

    const rewritten = await sandbox.run(['report', 'catalog.yaml']);
    expect(rewritten.code, rewritten.stderr).toBe(0);
    expect(rewritten.stdout).toMatch(/report written: 12 completed, 0 failed/);
    expect(rewritten.stdout).toMatch(/includes pixelmill\/cli-test\/retry-1/);
    expect(readFileSync(out('report.jsonl'), 'utf8')).toBe(report);
    const again = JSON.parse(readFileSync(out('summary.json'), 'utf8')) as Record<string, unknown>;
    expect({ ...again, finished_at: null }).toEqual({ ...summary, finished_at: null });
  });
});

describe('errors, help and exit codes', () => {
  it('an unknown run is one line on stderr and exit code 1, no stack trace', async () => {
    const result = await sandbox.run(['status', 'no-such-run']);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([
      'pixelmill: no run pixelmill/no-such-run on this Temporal (see `pixelmill list`)',
    ]);
  });

  it('--version prints the version of package.json', async () => {
    const result = await sandbox.run(['--version']);
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(pkg.version);
  });

  it('a usage error exits 2', async () => {
    const result = await sandbox.run(['list', '--limit', 'many']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--limit.*expected a whole number/);
  });

  it('every command documents examples, and the main help the exit codes', async () => {
    const main = await sandbox.run(['--help']);
    // Every command the main help lists (a line of its "Commands:" block starting with a name).
    const commandsBlock = main.stdout.split('Commands:\n')[1]?.split('\n\n')[0] ?? '';
    const commands = [...commandsBlock.matchAll(/^ {2}([a-z-]+)/gm)]
      .map((match) => match[1]!)
      .filter((command) => command !== 'help');
    expect(commands.length).toBeGreaterThanOrEqual(15);
    // Each command's help in this process (the main help above came from the built CLI): a CLI
    // process takes a second or two to start, which one per command paid for nothing more.
    for (const command of commands) {
      const help = await runInProcess([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).toMatch(/\nExamples:\n {2}\$ .*pixelmill /);
    }
    const docs = readFileSync(new URL('../docs/cli.md', import.meta.url), 'utf8');
    for (const [code, meaning] of EXIT_CODES) {
      expect(main.stdout).toContain(`${String(code).padEnd(4)}${meaning}`);
      const escaped = meaning.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      expect(docs).toMatch(new RegExp(`\\|\\s*${code}\\s*\\|\\s*${escaped}\\s*\\|`));
    }
  });
});
