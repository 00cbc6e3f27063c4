// Issue #16's figures. Part one: the polling run of N items, then the same catalog with 1% of its
// prompts edited, run again in the same folder: what the second run submitted and was charged
// (the emulator's own counts), and its wall time against the first's. Part two: `pixelmill plan`
// of a 100,000-item manifest (1% edited) against a 100,000-item catalog index whose images are
// on disk: the time from typing it to its answer.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generationKey } from '../catalog/generation-key.js';
import { catalogHeader, catalogIndexLines, type CatalogEntry } from '../catalog/index-file.js';
import { loadManifest } from '../manifest/load.js';
import { CATALOG_INDEX_FILE, STATE_DIR_NAME } from '../runstate/index.js';
import { benchItemId, writeItemsFile, writeManifest } from './catalog-files.js';
import type { CompareSpec } from './compare.js';
import { startEmulatorProcess } from './emulator-process.js';
import { round } from './figures.js';
import { runPixelmill, type PixelmillRunFigures } from './pixelmill-run.js';
import { exited, ProcessSampler, spawnCli } from './processes.js';

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
  mkdirSync(join(dir, 'out', STATE_DIR_NAME), { recursive: true });
  const original = writeManifest(dir, { name: 'bench-plan', itemsFile: await writeItemsFile(dir, items) });
  const loaded = loadManifest(original);

  const run = 'pixelmill/bench-plan@bench';
  const entries: CatalogEntry[] = loaded.items.map((item) => {
    const path = `${item.id}_0.png`;
    const bytes = Buffer.from(`image of ${item.id}`);
    writeFileSync(join(dir, 'out', path), bytes);
    return {
      key: generationKey(item),
      id: item.id,
      images: [
        {
          path,
          sha256: '0'.repeat(64),
          bytes: bytes.length,
          source_url: `http://results.invalid/${item.id}/0.png`,
        },
      ],
      task_id: `task-${item.id}`,
      attempts: 1,
      credits_cost: 1,
      made_by: run,
      used_by: run,
    };
  });
  const header = catalogHeader({
    catalog: 'bench-plan',
    run,
    manifest_hash: loaded.hash,
    items,
    finished_at: new Date().toISOString(),
  });
  writeFileSync(
    join(dir, 'out', STATE_DIR_NAME, CATALOG_INDEX_FILE),
    [...catalogIndexLines({ header, entries })].join(''),
  );
  await writeItemsFile(dir, items, edited);
  const started = performance.now();
  const child = spawnCli(['plan', original, '--json'], { cwd: dir });
  const rss = new ProcessSampler(child.pid!, 50);
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await exited(child);
  const seconds = (performance.now() - started) / 1000;
  const peakRssMb = rss.stop();
  if (code !== 0) throw new Error(`pixelmill plan exited with ${code}: ${err.trim()}`);
  const plan = JSON.parse(out) as { counts: Record<string, number> };
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
