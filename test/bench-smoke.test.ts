// Keeps the benchmark harness from rotting: a tiny run must produce a complete, sane result.
// Nothing here is about speed; the figures themselves live in BENCHMARKS.md.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import type { AdaptiveResult } from '../bench/adaptive.js';

const bench = fileURLToPath(new URL('../dist/bench/emulator-throughput.js', import.meta.url));

it('the emulator throughput benchmark runs end to end and reports every figure', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'pixelmill-bench-')), 'result.json');
  await promisify(execFile)(process.execPath, [
    bench,
    '--seconds',
    '1',
    '--connections',
    '4',
    '--tasks',
    '500',
    '--json',
    out,
  ]);
  const result = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
  expect(result.requests).toBeGreaterThan(0);
  expect(result.status_counts).toEqual({ 200: result.requests });
  expect(result.tasks_stored).toBeGreaterThanOrEqual(500);
  expect(result.requests_per_second).toBeGreaterThan(0);
  expect(result.emulator_peak_rss_mb).toBeGreaterThan(0);
});

it('the adaptive phase (issue #13) runs end to end: two runs sharing one account, and the baseline', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'pixelmill-bench-')), 'result.json');
  const main = fileURLToPath(new URL('../dist/bench/main.js', import.meta.url));
  // Small, on a compressed clock, and two of the four parts (a pixelmill part takes some 15 s
  // however few its items: the governor starts slow); the figures of so few items say nothing
  // about speed.
  await promisify(execFile)(process.execPath, [
    main,
    '--phases',
    'adaptive',
    '--adaptive-parts',
    'two,naive',
    '--items',
    '100',
    '--naive-limit',
    '30',
    '--time-scale',
    '0.01',
    '--json',
    out,
  ]);
  const { adaptive, targets } = JSON.parse(readFileSync(out, 'utf8')) as {
    adaptive: AdaptiveResult;
    targets: { name: string; value: number | null }[];
  };
  const two = adaptive.two_runs!;
  expect(two.items_completed).toBe(100);
  expect(two.calls.admitted.submit).toBeGreaterThanOrEqual(100);
  expect(two.calls.admitted.query).toBeGreaterThanOrEqual(100);
  expect(two.calls.reported).not.toBeNull();
  expect(two.limit.seconds).toBeGreaterThan(adaptive.mean_generation_s);
  expect(two.wall_to_limit).toBeGreaterThan(0);
  const shares = two.runs.map((run) => run.share_while_both_pct!);
  expect(shares).toHaveLength(2);
  expect(shares[0]! + shares[1]!).toBeCloseTo(100, 0);
  const naive = adaptive.naive!;
  expect(naive.items_completed).toBe(100);
  expect(naive.calls.admitted.submit).toBe(100);
  expect(targets.map((t) => t.name)).toContain('adaptive two runs: wall / limit (both runs)');
  expect(targets.every((t) => t.value !== null)).toBe(true);
}, 90_000);
