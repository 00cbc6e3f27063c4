// A worker's line to the governor: what it paces at before, between and after the governor's
// answers. The governor itself is replaced by a function answering grants (the real one, on a
// dev server, is in rate-governor.test.ts); the clock is injected.
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { GovernorLink } from '../activities/governor-link.js';
import { BACK_OFF, INITIAL_PER_SECOND, SLOW_START_GROWTH } from '../governor/rate-law.js';
import type { GovernorGrant, GovernorReport, GroupGrant } from '../governor/types.js';

const grantOf = (submit: Partial<GroupGrant>): GovernorGrant => {
  const base: GroupGrant = {
    ratePerSecond: 10,
    holdUntilMs: 0,
    source: 'discovered',
    sinceMs: 0,
    workers: 1,
  };
  return { submit: { ...base, ...submit }, query: base };
};

function governorAnswering(answer: () => GovernorGrant) {
  const reports: GovernorReport[] = [];
  const client = {
    options: { identity: 'worker-a' },
    workflow: {
      executeUpdateWithStart: async (_update: unknown, options: { args: [GovernorReport] }) => {
        reports.push(options.args[0]);
        return answer();
      },
    },
  } as unknown as Client;
  return { client, reports };
}

describe('a worker between the governor and its calls', () => {
  it('starts where the law starts, and asks the governor before its first call', async () => {
    let now = 0;
    const link = new GovernorLink('acct', () => now);
    expect(link.current('submit').ratePerSecond).toBe(INITIAL_PER_SECOND);
    const { client, reports } = governorAnswering(() => grantOf({ ratePerSecond: 12 }));
    expect((await link.grant('submit', client)).ratePerSecond).toBe(12);
    expect(reports).toHaveLength(1);
    now += 1000;
    await link.grant('submit', client);
    expect(reports).toHaveLength(1); // a fresh grant is not asked for again
    link.close();
  });

  it('backs off at once on a 429, once per Retry-After, and a whole growth further in slow start', async () => {
    let now = 0;
    for (const [source, factor] of [
      ['discovered', BACK_OFF],
      ['discovering', BACK_OFF / SLOW_START_GROWTH],
    ] as const) {
      const link = new GovernorLink('acct', () => now);
      const { client } = governorAnswering(() => grantOf({ ratePerSecond: 30, source }));
      await link.grant('submit', client);
      link.sent('submit');
      link.answered('submit', { retryAfterMs: 1000 });
      expect(link.current('submit').ratePerSecond).toBeCloseTo(30 * factor);
      // The calls already on the wire meet the same refusal: they are not news.
      link.answered('submit', { retryAfterMs: 1000 });
      expect(link.current('submit').ratePerSecond).toBeCloseTo(30 * factor);
      now += 1500;
      link.answered('submit', { retryAfterMs: 1000 });
      expect(link.current('submit').ratePerSecond).toBeCloseTo(30 * factor * BACK_OFF);
      expect(link.current('query').ratePerSecond).toBe(10);
      link.close();
    }
  });

  it('paces at its share of the rate: over the callers the governor counted, itself among them or not', async () => {
    let now = 0;
    const link = new GovernorLink('acct', () => now);
    const { client, reports } = governorAnswering(() => grantOf({ ratePerSecond: 30, workers: 2 }));
    await link.grant('submit', client);
    // Its report had no submits yet: it is a third caller the governor has not counted.
    expect(link.share('submit')).toBeCloseTo(10);
    link.sent('submit');
    now += 20_000; // the grant is stale: the next call reports first
    await link.grant('submit', client);
    expect(reports.at(-1)?.groups.submit?.attempted).toBe(1);
    expect(link.share('submit')).toBeCloseTo(15);
    link.close();
  });
});
