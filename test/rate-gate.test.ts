// The worker's rate gate paces every API call of an account at one rate, whichever task queue the
// activity making it runs on: collectResults' GETs run on the transfer queue, and must share the
// pace of the calls on the API queue, not get one of their own.
import { describe, expect, it } from 'vitest';
import { RateGate } from '../activities/rate-gate.js';
import { taskQueuesOf } from '../common/names.js';
import { inActivity } from './activities-fixture.js';
import { steppingClock } from './support/stepping-clock.js';

const queues = taskQueuesOf('a0123456789abcdef');

describe('RateGate', () => {
  it('paces the calls of activities on the API and the transfer queues at one fixed rate', async () => {
    const clock = steppingClock();
    const gate = new RateGate({ apiWorkers: 1, now: clock.now, clock });
    const released: number[] = [];
    const call = async (): Promise<void> => {
      (await gate.acquire('query', { requestsPerSecond: 10 }))();
      released.push(clock.now());
    };
    // Alternating, as a shard's lookups (API queue) and its collect activities' GETs (transfer) do.
    for (let i = 0; i < 6; i++) {
      const taskQueue = i % 2 === 0 ? queues.api : queues.transfer;
      await inActivity(call, undefined, { taskQueue }).result;
    }
    const gaps = released.slice(1).map((at, i) => at - released[i]!);
    expect(gaps).toHaveLength(5);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(100);
    gate.close();
  });
});
