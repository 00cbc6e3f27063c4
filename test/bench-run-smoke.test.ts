// Keeps `npm run bench` from rotting: a tiny run of every phase must finish and report every
// figure with a sane value. Nothing here is about speed (no timing assertions).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const bench = fileURLToPath(new URL('../dist/bench/main.js', import.meta.url));
const ITEMS = 30;

interface Side {
  system: string;
  finished: boolean;
  items: number;
  items_completed: number;
  images: number;
  wall_s: number;
  bound: { seconds: number; formula: string };
  ratio_to_bound: number;
  api_calls: {
    total: number;
    per_image: number;
    by_endpoint: Record<string, { calls: number; per_image: number }>;
    http_429: number;
    downloads: number;
  };
  api_calls_per_s: number;
  peak_rss_mb: number;
  histories: {
    workflows: number;
    executions: number;
    events_total: number;
    events_per_item: number;
    activities_per_item: number;
    workflow_tasks_per_item: number;
    largest: { events: number; workflow_id: string };
    run_events_per_shard: number;
  } | null;
  bytes_stored: number;
  rehost_mb_per_s: number;
  webhook_deliveries: Record<string, number> | null;
}

async function runBench(args: string[]): Promise<{ stdout: string; result: Record<string, unknown> }> {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-bench-smoke-'));
  const out = join(dir, 'result.json');
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [bench, ...args, '--json', out], {
      timeout: 540_000,
    });
    return { stdout, result: JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown> };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A process's CPU per image by kind of thread accounts for most of its whole `ms`, and no more (a
 * thread that exits between two samples loses its last interval).
 */
function expectThreadsAccountFor(byThread: Record<string, number>, ms: number): void {
  const threadsMs = Object.values(byThread).reduce((sum, groupMs) => sum + groupMs, 0);
  expect(threadsMs).toBeGreaterThan(0.5 * ms);
  expect(threadsMs).toBeLessThanOrEqual(ms * 1.02 + 0.1);
}

function expectCompleteSide(side: Side, system: string, items: number): void {
  expect(side.system).toBe(system);
  expect(side.finished).toBe(true);
  expect(side.items_completed).toBe(items);
  expect(side.images).toBe(items);
  expect(side.wall_s).toBeGreaterThan(0);
  expect(side.bound.seconds).toBeGreaterThan(0);
  expect(side.ratio_to_bound).toBeCloseTo(side.wall_s / side.bound.seconds, 2);
  // Every image needs a submit and a way to learn its result; no call is invented.
  expect(side.api_calls.by_endpoint['POST /v1/images/generations']?.calls).toBeGreaterThanOrEqual(items);
  expect(side.api_calls.per_image).toBeGreaterThanOrEqual(1);
  expect(side.api_calls.downloads).toBeGreaterThanOrEqual(items);
  expect(side.api_calls_per_s).toBeGreaterThan(0);
  expect(side.peak_rss_mb).toBeGreaterThan(20);
  expect(side.bytes_stored).toBeGreaterThan(items * 1000);
  expect(side.rehost_mb_per_s).toBeGreaterThan(0);
}

// The emulator phase runs bench/emulator-throughput.js, which test/bench-smoke.test.ts covers.
it('a tiny `npm run bench` runs its phases and reports every figure', { timeout: 600_000 }, async () => {
  const run = await runBench([
    ...['--items', String(ITEMS), '--rps', '50', '--time-scale', '0.01'],
    ...['--capacity-items', '20', '--big-items', '2000', '--phases', 'pixelmill,capacity,big'],
  ]);
  const { stdout } = run;
  const result = run.result as {
    emulator: { time_scale: number; rate_limit_per_s: number; mean_generation_s: number };
    pixelmill: Side;
    naive: Side | null;
    capacity: {
      items: number;
      images_per_s: number;
      side: Side & { cpu_s: number; temporal_server_cpu_s: number; emulator_cpu_s: number };
      script: Side & { cpu_s: number; emulator_cpu_s: number; images_checked?: number };
      ratio_to_script: number;
      checked_script: Side & { cpu_s: number; images_checked: number; images_flagged: number };
      ratio_to_checked_script: number;
      cpu_ratio_to_checked_script: number;
      cpu_ms_per_image: {
        pixelmill: number;
        pixelmill_cli: number;
        temporal_server: number;
        script: number;
        checked_script: number;
        pixelmill_cli_by_thread: Record<string, number>;
        checked_script_by_thread: Record<string, number>;
      };
      emulator_cpu_ms_per_image: { pixelmill: number; script: number; checked_script: number };
    };
    big_manifest: { items: number; validate_s: number; run_start_s: number };
    targets: { name: string; value: number | null; met: boolean | null }[];
  };

  expect(result.emulator).toMatchObject({ time_scale: 0.01, rate_limit_per_s: 50 });
  expect(result.emulator.mean_generation_s).toBeGreaterThan(0);

  expectCompleteSide(result.pixelmill, 'pixelmill', ITEMS);
  const histories = result.pixelmill.histories!;
  expect(histories.workflows).toBe(2); // the run and its one shard
  expect(histories.executions).toBeGreaterThanOrEqual(2);
  expect(histories.largest.events).toBeGreaterThan(10);
  expect(histories.events_total).toBeGreaterThanOrEqual(histories.largest.events);
  // One shard: the run's own events, some (started, the shard's start and end, completed), not all.
  expect(histories.run_events_per_shard).toBeGreaterThan(5);
  expect(histories.run_events_per_shard).toBeLessThan(histories.events_total);
  expect(histories.events_per_item).toBeCloseTo(histories.events_total / ITEMS, 1);
  // Each activity and workflow task writes several events: both are some, and fewer than events.
  for (const perItem of [histories.activities_per_item, histories.workflow_tasks_per_item]) {
    expect(perItem).toBeGreaterThan(0);
    expect(perItem).toBeLessThan(histories.events_per_item);
  }

  // The naive baseline's process is bench-smoke.test.ts's (the adaptive phase's naive part); its
  // phase measures it the way the capacity phase measures the script, checked below.
  expect(result.naive).toBeNull();

  expectCompleteSide(result.capacity.side, 'pixelmill', 20);
  expect(result.capacity.images_per_s).toBeGreaterThan(0);
  // The script baseline beside it: batch lookups, then one GET per finished task.
  const { script, side: capacitySide, cpu_ms_per_image: cpu } = result.capacity;
  expectCompleteSide(script, 'script', 20);
  expect(script.api_calls.by_endpoint['POST /v1/tasks/batch']?.calls).toBeGreaterThanOrEqual(1);
  expect(script.api_calls.by_endpoint['GET /v1/tasks/{id}']?.calls).toBe(20);
  expect(result.capacity.ratio_to_script).toBeCloseTo(
    result.capacity.images_per_s / (script.images / script.wall_s),
    1,
  );
  // CPU from /proc: each process used some, and the per-image figures add up.
  expect(capacitySide.cpu_s).toBeGreaterThan(0);
  expect(capacitySide.temporal_server_cpu_s).toBeGreaterThan(0);
  expect(script.cpu_s).toBeGreaterThan(0);
  expect(cpu.pixelmill).toBeCloseTo(cpu.pixelmill_cli + cpu.temporal_server, 1);
  // The CLI's CPU by thread: the main thread used some. The Temporal core's share is not asserted:
  // /proc counts 10 ms ticks, and 20 images may cost the core less than one.
  expect(cpu.pixelmill_cli_by_thread.main).toBeGreaterThan(0);
  expectThreadsAccountFor(cpu.pixelmill_cli_by_thread, cpu.pixelmill_cli);
  // The emulator's CPU is measured apart for each side.
  expect(capacitySide.emulator_cpu_s).toBeGreaterThan(0);
  expect(result.capacity.emulator_cpu_ms_per_image.script).toBeCloseTo(
    (script.emulator_cpu_s * 1000) / script.images,
    1,
  );
  // The checking script decodes, thumbnails and checks every image it stores; the plain one none.
  const { checked_script: checked } = result.capacity;
  expectCompleteSide(checked, 'script', 20);
  expect(checked.images_checked).toBe(20);
  expect(checked.images_flagged).toBe(0);
  expect(script.images_checked).toBeUndefined();
  // Its CPU, and by thread too, to set beside pixelmill's.
  expect(cpu.checked_script).toBeGreaterThan(0);
  expectThreadsAccountFor(cpu.checked_script_by_thread, cpu.checked_script);
  expect(result.capacity.cpu_ratio_to_checked_script).toBeCloseTo(cpu.pixelmill / cpu.checked_script, 1);
  expect(result.capacity.ratio_to_checked_script).toBeCloseTo(
    result.capacity.images_per_s / (checked.images / checked.wall_s),
    1,
  );
  expect(result.big_manifest.items).toBe(2000);
  expect(result.big_manifest.validate_s).toBeGreaterThan(0);
  expect(result.big_manifest.run_start_s).toBeGreaterThan(0);

  expect(result.targets.map((t) => t.name)).toHaveLength(9);
  for (const t of result.targets) expect(t.value, t.name).not.toBeNull();
  expect(stdout).toMatch(/wall \/ bound/);
  expect(stdout).toMatch(/API calls per image/);
  expect(stdout).toMatch(/largest workflow history/);
});

it(
  '--webhooks runs pixelmill with webhooks: every task announced, judged against 1 call per image',
  { timeout: 300_000 },
  async () => {
    const { result } = await runBench([
      '--items',
      '20',
      '--rps',
      '50',
      '--time-scale',
      '0.01',
      '--webhooks',
      '--phases',
      'pixelmill',
    ]);
    const side = result.pixelmill as Side;
    expectCompleteSide(side, 'pixelmill', 20);
    expect(side.webhook_deliveries?.delivered).toBe(20);
    expect(side.bound.formula).toMatch(/^1 calls\/image/);
    expect(result.naive).toBeNull();
    const targets = result.targets as { name: string; limit: string }[];
    expect(targets.find((t) => t.name === 'pixelmill API calls per image')?.limit).toBe('<= 1.05');
  },
);
