// Issue #16's figures. Part one: the polling run of N items, then the same catalog with 1% of its
// prompts edited, run again in the same folder: what the second run submitted and was charged
// (the emulator's own counts), and its wall time against the first's. Part two: `pixelmill plan`
// of a 100,000-item manifest (1% edited) against a 100,000-item catalog index whose images are
// on disk: the time from typing it to its answer.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadManifest } from '../manifest/load.js';
import { benchItemId, writeCatalogIndex, writeItemsFile, writeManifest } from './catalog-files.js';
import type { CompareSpec } from './compare.js';
import { startEmulatorProcess } from './emulator-process.js';
import { round } from './figures.js';
import { runPixelmill, type PixelmillRunFigures } from './pixelmill-run.js';
import { timeCli } from './processes.js';

/** One item in 100 has its prompt edited. */
const edited = (index: number): boolean => index % 100 === 0;

export interface IncrementalFigures {
  items: number;
  edited: number;
  first_wall_s: number;
  second_wall_s: number;
  /** Second run's wall / first run's (target: at most 0.05). */
  wall_ratio: number;
  /** Tasks the API created in the second run (target: exactly `edited`). */
  second_tasks: number;
  /** Credits the API charged in the second run, and what the edited items cost at their price. */
  second_credits: number;
  edited_items_credits: number;
  second_items_completed: number;
  plan: PlanFigures;
}

export interface PlanFigures {
  items: number;
  /** `pixelmill plan --json` spawned to exited (target: at most 5 s). */
  seconds: number;
  peak_rss_mb: number;
  counts: Record<string, number>;
}

function sideFigures(figures: PixelmillRunFigures, label: string): void {
  if (!figures.finished) throw new Error(`the ${label} run did not finish; see ${figures.cli_log}`);
}

export async function incrementalBenchmark(
  spec: CompareSpec & { maxInFlight: number; planItems: number },
): Promise<IncrementalFigures> {
  const emulator = await startEmulatorProcess(spec.dir, {
    timeScale: spec.timeScale,
    requestsPerSecond: spec.rps,
  });
  const run = { dir: spec.dir, name: 'bench-incremental', emulator, items: spec.items };
  const common = {
    ...run,
    requestsPerSecond: spec.rps,
    maxInFlight: spec.maxInFlight,
    deadline: spec.deadline,
  };
  let first: PixelmillRunFigures;
  let second: PixelmillRunFigures;
  let before: Awaited<ReturnType<typeof emulator.stats>>;
  let after: typeof before;
  try {
    first = await runPixelmill(common);
    sideFigures(first, 'first');
    before = await emulator.stats();
    second = await runPixelmill({ ...common, edited });
    sideFigures(second, 'second');
    after = await emulator.stats();
  } finally {
    await emulator.stop();
  }
  const editedCount = Array.from({ length: spec.items }, (_, k) => k + 1).filter(edited).length;
  return {
    items: spec.items,
    edited: editedCount,
    first_wall_s: first.wall_s,
    second_wall_s: second.wall_s,
    wall_ratio: round(second.wall_s / first.wall_s, 4),
    second_tasks: after.tasks_total - before.tasks_total,
    second_credits: after.credits_charged - before.credits_charged,
    // The bench's items are 1K, one image each: 1 credit apiece.
    edited_items_credits: editedCount,
    second_items_completed: second.items_completed,
    plan: await planFigures(join(spec.dir, 'plan'), spec.planItems),
  };
}

/**
 * A catalog index for every item of the unedited manifest, its images on disk (small files: the
 * plan reads their sizes, not their bytes), then `plan` of the edited manifest against it.
 */
async function planFigures(dir: string, items: number): Promise<PlanFigures> {
  mkdirSync(dir, { recursive: true });
  const original = writeManifest(dir, { name: 'bench-plan', itemsFile: await writeItemsFile(dir, items) });
  writeCatalogIndex(join(dir, 'out'), loadManifest(original), {
    catalog: 'bench-plan',
    run: 'pixelmill/bench-plan@bench',
    imagePath: (item) => `${item.id}_0.png`,
    sourceUrl: (item) => `http://results.invalid/${item.id}/0.png`,
  });
  await writeItemsFile(dir, items, edited);
  const { code, stdout, stderr, seconds, peakRssMb } = await timeCli(['plan', original, '--json'], {
    cwd: dir,
  });
  if (code !== 0) throw new Error(`pixelmill plan exited with ${code}: ${stderr.trim()}`);
  const plan = JSON.parse(stdout) as { counts: Record<string, number> };
  if (
    plan.counts.changed !== items / 100 ||
    plan.counts.unchanged !== items - items / 100 ||
    plan.counts.moved !== 0
  )
    throw new Error(
      `pixelmill plan counted ${JSON.stringify(plan.counts)} (${benchItemId(100)} and every 100th edited)`,
    );
  return { items, seconds: round(seconds, 2), peak_rss_mb: peakRssMb, counts: plan.counts };
}
