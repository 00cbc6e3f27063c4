// limits.deadline end to end, as a user meets it (issue #20 section 3): a run whose deadline
// passes stops submitting, collects what is at the API, writes its report with every unfinished
// item `cancelled` for `deadline` and exits 4; `pixelmill retry-failed` then finishes the rest
// without paying again for what is stored.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSandbox, fastEmulatorConfig, type CliSandbox } from './support/cli.js';

const ITEMS = 40;
let sandbox: CliSandbox;

interface Line {
  id: string;
  status: string;
  task_id: string | null;
  error: { code: string; message: string } | null;
}

beforeAll(async () => {
  sandbox = await cliSandbox();
  Object.assign(sandbox.env, fastEmulatorConfig(sandbox, 0.01));
  const items = Array.from({ length: ITEMS }, (_, i) => `  - { id: d${i}, prompt: "deadline product ${i}" }`);
  // 10 API calls a second, evenly paced: submitting everything would take 4 s, the deadline comes
  // after 2. The retry pays two calls (submit, get) per unfinished item at that rate.
  writeFileSync(
    join(sandbox.dir, 'deadline.yaml'),
    [
      'name: deadline-test',
      'limits: { requests_per_second: 10, deadline: 2s }',
      'output: ./out',
      'items:',
      ...items,
    ].join('\n'),
  );
});
afterAll(async () => {
  await sandbox?.stop();
});

function report(): Line[] {
  return readFileSync(join(sandbox.dir, 'out', 'report.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Line);
}

/** When the emulator acknowledged each task (its journal: [id, account, prompt, ..., submittedAt, ...]). */
function submitTimes(): number[] {
  return readFileSync(join(sandbox.dir, '.pixelmill', 'emulator-tasks.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as unknown[])[8] as number);
}

describe('limits.deadline', () => {
  it('stops submitting at the deadline, reports the rest as deadline and exits 4; retry-failed finishes them', async () => {
    const first = await sandbox.run(['run', 'deadline.yaml', '--no-progress']);
    expect(first.code, first.stderr).toBe(4);
    expect(first.stderr).toMatch(/deadline/);

    const lines = report();
    const summary = JSON.parse(readFileSync(join(sandbox.dir, 'out', 'summary.json'), 'utf8')) as {
      started_at: string;
    };
    const unfinished = lines.filter((line) => line.status !== 'completed');
    expect(unfinished.length).toBeGreaterThan(0);
    expect(lines.length - unfinished.length).toBeGreaterThan(0);
    for (const line of unfinished) {
      expect(line).toMatchObject({ status: 'cancelled', task_id: null, error: { code: 'deadline' } });
      expect(line.error?.message).toMatch(
        /^the run's deadline \(limits\.deadline, .*\) passed before this item was finished$/,
      );
    }
    // Nothing reached the API after the deadline (a call already on its way may land a moment later).
    const deadline = Date.parse(summary.started_at) + 2_000;
    expect(Math.max(...submitTimes())).toBeLessThan(deadline + 1_500);
    const paidBefore = submitTimes().length;
    expect(paidBefore).toBe(lines.length - unfinished.length);

    const retry = await sandbox.run(['retry-failed', 'deadline.yaml', '--no-progress'], {
      timeoutMs: 180_000,
    });
    expect(retry.code, retry.stderr).toBe(0);
    expect(report().every((line) => line.status === 'completed')).toBe(true);
    // Only what was unfinished was submitted again.
    expect(submitTimes().length).toBe(paidBefore + unfinished.length);
  }, 240_000);
});
