// Keeps the benchmark harness from rotting: a tiny run must produce a complete, sane result.
// Nothing here is about speed; the figures themselves live in BENCHMARKS.md.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

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
