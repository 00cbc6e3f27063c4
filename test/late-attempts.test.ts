// An attempt of an activity can run after a later attempt of it: a partition holds the long poll
// that carries its task, Temporal times it out and retries it elsewhere, and the held task reaches
// its worker when the partition heals. What such an attempt writes must not undo the later one's.
import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { appendSequence } from '../activities/context.js';
import { lateStart } from '../activities/late-attempts.js';

function sequenceOf(info: { scheduledTimestampMs: number; activityId: string; attempt: number }): Promise<string> {
  const env = new MockActivityEnvironment({
    ...info,
    workflowExecution: { workflowId: 'shard', runId: 'run-a' },
  });
  return env.run(async () => appendSequence(Context.current())!);
}

describe('a late attempt', () => {
  it('is one that started more than half a heartbeat timeout after it was scheduled', () => {
    expect(lateStart(40_000, 0, 10_000)).toBe(true);
    expect(lateStart(5_001, 0, 10_000)).toBe(true);
    expect(lateStart(5_000, 0, 10_000)).toBe(false);
    expect(lateStart(100, 0, 10_000)).toBe(false);
    // Without heartbeats, Temporal retries only at the start-to-close timeout: not this case.
    expect(lateStart(40_000, 0, undefined)).toBe(false);
  });

  it("appends its outcome lines apart from every other attempt's, sorted before the later ones", async () => {
    const first = await sequenceOf({ scheduledTimestampMs: 1_000, activityId: '12', attempt: 1 });
    const retry = await sequenceOf({ scheduledTimestampMs: 1_000, activityId: '12', attempt: 2 });
    const tenth = await sequenceOf({ scheduledTimestampMs: 1_000, activityId: '12', attempt: 10 });
    const earlierActivity = await sequenceOf({ scheduledTimestampMs: 999, activityId: '11', attempt: 3 });
    const laterActivity = await sequenceOf({ scheduledTimestampMs: 1_001, activityId: '13', attempt: 1 });
    expect(new Set([first, retry, tenth]).size).toBe(3);
    expect([laterActivity, tenth, first, earlierActivity, retry].sort()).toEqual([
      earlierActivity,
      first,
      retry,
      tenth,
      laterActivity,
    ]);
  });
});
