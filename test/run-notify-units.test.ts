// What a run's notification says of it besides its result, before and after its plan is known.
import { describe, expect, it } from 'vitest';
import { notifiedRun } from '../workflows/run-notify.js';

describe('notifiedRun', () => {
  it('names the run by its manifest once planned, with its size, schedule and reason', () => {
    expect(notifiedRun('run-1', { name: 'shop', itemCount: 40 }, 'nightly', 'API key refused')).toEqual({
      runId: 'run-1',
      name: 'shop',
      schedule: 'nightly',
      itemCount: 40,
      reason: 'API key refused',
    });
  });

  it('falls back to the run id, and leaves out what is not known', () => {
    expect(notifiedRun('run-2', undefined, undefined, undefined)).toEqual({ runId: 'run-2', name: 'run-2' });
  });
});
