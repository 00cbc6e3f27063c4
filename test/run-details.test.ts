// The run's current details in the Temporal UI (workflows/run-details.ts).
import { describe, expect, it } from 'vitest';
import { zeroCounts } from '../common/item-counts.js';
import { runDetails, type RunDetailsView } from '../workflows/run-details.js';

const view = (over: Partial<RunDetailsView> = {}): RunDetailsView => ({
  state: 'running',
  itemCount: 1_000,
  counts: { ...zeroCounts(), completed: 400, failed: 3 },
  credits: 812,
  shardCount: 2,
  started: 2,
  running: 1,
  tasksRejected: 0,
  endedByDeadline: 0,
  rate: { fixed: 5 },
  ...over,
});

describe('run details', () => {
  it('says how far a running run is, and its rate', () => {
    expect(runDetails(view())).toBe(
      '1 of 2 shards finished, 1 running: 400 of 1000 items completed, 3 failed so far; 812 credits. API rate: 5/s (fixed).',
    );
  });

  it('names the governor of a discovered rate, the deadline, rejected images and the carried items', () => {
    const text = runDetails(
      view({
        rate: { governor: 'pixelmill-governor/a1' },
        deadlineAt: Date.parse('2026-11-27T06:00:00Z'),
        tasksRejected: 2,
        carryOver: { items: 50, reused: 40, restored: 3, moved: 2, regenerated: 5 },
      }),
    );
    expect(text).toContain(
      'Carried over from the catalog: 40 of 50 items (3 fetched again, 2 copied to new paths, 5 generated after all).',
    );
    expect(text).toContain('The checks rejected the images of 2 tasks, whose items were generated again.');
    expect(text).toContain('Deadline 2026-11-27T06:00:00.000Z.');
    expect(text).toContain(
      'API rate: discovered by pixelmill-governor/a1, whose details show the rates in force.',
    );
  });

  it('says the outcome of a finished run, and what its deadline left', () => {
    const text = runDetails(
      view({
        state: 'finished',
        deadlineAt: 1,
        endedByDeadline: 7,
        counts: { ...zeroCounts(), completed: 993, cancelled: 7 },
      }),
    );
    expect(text).toMatch(/^Finished: /);
    expect(text).toContain('The deadline ended it with 7 items unfinished.');
  });
});
