// Outcome lines in a local run state (runstate/local.ts): read back in the order appended, a bad
// line skipped, and a batch's read limited to its own items.
import { appendFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalRunStateStore, type OutcomeLine } from '../runstate/index.js';
import { shardOutcomesFile } from '../runstate/outcomes.js';
import { outcomeLine } from './support/plan.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

afterAll(removeTempDirs);

describe('outcome lines in a local run state', () => {
  it('reads a shard in file order, skipping bad lines, and only the asked indices when given', async () => {
    const store = new LocalRunStateStore();
    const ref = { stateDir: tempDir(), planHash: 'a'.repeat(64) };
    await store.appendOutcomes(ref, 0, [outcomeLine(0, 't0'), outcomeLine(1, 't1')]);
    appendFileSync(shardOutcomesFile(ref, 0), '{"index": 2, "status": "not a status"}\nnot json\n');
    await store.appendOutcomes(ref, 0, [outcomeLine(2, 't2'), outcomeLine(0, 't0b')]);
    await store.appendOutcomes(ref, 1, [outcomeLine(500, 't500')]);
    const taskIds = (lines: OutcomeLine[]) => lines.map((outcome) => outcome.task_id);
    expect(taskIds(await store.readOutcomes(ref, 0))).toEqual(['t0', 't1', 't2', 't0b']);
    expect(taskIds(await store.readOutcomes(ref, 0, new Set([0, 2])))).toEqual(['t0', 't2', 't0b']);
    expect(taskIds(await store.readOutcomes(ref, undefined, new Set([1, 500])))).toEqual(['t1', 't500']);
    expect(await store.readOutcomes(ref, 0, new Set())).toEqual([]);
  });
});
