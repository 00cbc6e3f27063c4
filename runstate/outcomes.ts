// Per-item outcomes of a run, as JSON lines under `<stateDir>/outcomes-<hash16>/shard-NNNN.jsonl`
// (NNNN = shard index + 1, as in shard workflow ids). Lines are only ever appended; for an item,
// the last line wins. This is how 100,000 outcomes stay out of workflow state: the workflow
// holds counts, the files hold what happened to each item, and writeReport joins them.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { CHECK_NAMES } from '../checks/image-checks.js';
import type { PlanRef } from '../common/types.js';
import { appendJsonLines, parseJsonLines } from './files.js';

const ErrorSummarySchema = z.object({ type: z.string(), code: z.string(), message: z.string() });

export const ImageRecordSchema = z.object({
  /** Relative to the output directory, with `/` separators. */
  path: z.string(),
  sha256: z.string(),
  bytes: z.number().int().min(0),
  source_url: z.string(),
  /** What the image checks found when it was stored (checks/): its format and dimensions, */
  format: z.string().optional(),
  width: z.number().int().min(0).optional(),
  height: z.number().int().min(0).optional(),
  /** its thumbnail (relative to the output), */
  thumbnail: z.string().optional(),
  /** and the checks it failed, at their levels. */
  checks: z
    .array(z.object({ check: z.enum(CHECK_NAMES), level: z.enum(['error', 'warn']), message: z.string() }))
    .optional(),
});
export type ImageRecord = z.infer<typeof ImageRecordSchema>;

export const OutcomeLineSchema = z.object({
  index: z.number().int().min(0),
  id: z.string(),
  status: z.enum(['completed', 'failed', 'cancelled', 'expired', 'skipped']),
  task_id: z.string().nullable(),
  attempts: z.number().int().min(0),
  credits_cost: z.number().min(0),
  images: z.array(ImageRecordSchema),
  error: ErrorSummarySchema.nullable(),
  /** When the provider stops serving the task's result URLs (ms since the epoch), when it said. */
  expires_at: z.number().optional(),
  /** Carried over by an incremental run: the run that generated it (workflow id @ execution). */
  reused_from: z.string().optional(),
});
export type OutcomeLine = z.infer<typeof OutcomeLineSchema>;

const SHARD_FILE = /^shard-(\d{4,})\.jsonl$/;

export function outcomesDir(plan: PlanRef): string {
  return join(plan.stateDir, `outcomes-${plan.planHash.slice(0, 16)}`);
}

export function shardOutcomesFile(plan: PlanRef, shard: number): string {
  return join(outcomesDir(plan), `shard-${String(shard + 1).padStart(4, '0')}.jsonl`);
}

export async function appendOutcomes(plan: PlanRef, shard: number, lines: readonly OutcomeLine[]) {
  await appendJsonLines(shardOutcomesFile(plan, shard), lines);
}

/**
 * The valid lines of one outcome file, in file order; a missing file has none. With `indices`,
 * only the lines of those plan indices: a shard's store activities each ask for their batch's,
 * and validating all of the shard's lines each time cost more than the batch's own work.
 */
export async function readOutcomeFile(file: string, indices?: ReadonlySet<number>): Promise<OutcomeLine[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return validOutcomeLines(parseJsonLines(text), indices);
}

/** The values that are valid outcome lines, of the plan indices in `indices` when given. */
export function validOutcomeLines(values: Iterable<unknown>, indices?: ReadonlySet<number>): OutcomeLine[] {
  const lines: OutcomeLine[] = [];
  for (const value of values) {
    if (indices && !indices.has((value as { index?: unknown } | null)?.index as number)) continue;
    const parsed = OutcomeLineSchema.safeParse(value);
    if (parsed.success) lines.push(parsed.data);
  }
  return lines;
}

/** Every outcome file of the plan, in shard order. */
export async function listOutcomeFiles(plan: PlanRef): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(outcomesDir(plan));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .filter((name) => SHARD_FILE.test(name))
    .sort()
    .map((name) => join(outcomesDir(plan), name));
}

/**
 * The newest outcome of each item (by plan index). A line for an index whose id differs is not
 * about this plan's item: it is ignored.
 */
export async function latestOutcomes(
  plan: PlanRef,
  items: readonly { id: string }[],
): Promise<(OutcomeLine | undefined)[]> {
  const latest = new Array<OutcomeLine | undefined>(items.length);
  for (const file of await listOutcomeFiles(plan)) {
    for (const line of await readOutcomeFile(file)) {
      if (items[line.index]?.id === line.id) latest[line.index] = line;
    }
  }
  return latest;
}
