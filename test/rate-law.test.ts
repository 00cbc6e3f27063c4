// The governor's control law (governor/rate-law.ts) against simulated providers, on an injected
// clock: a per-second token bucket, a per-minute quota, a limit that drops and returns, a
// provider that refuses everything, and a cap. The client sends at the granted rate in 50 ms
// steps (as many calls as it may, never more) and reports each second, and at once on a 429.
import { describe, expect, it } from 'vitest';
import { FLOOR_PER_SECOND, grantedRate, initialLaw, observe, type LawState } from '../governor/rate-law.js';

interface Provider {
  /** Whether a call at `nowMs` is admitted; else the Retry-After (ms) it answers. */
  call(nowMs: number): true | number;
}

/** A token bucket: `perSecond` refill, `burst` capacity; Retry-After in whole seconds, at least 1. */
function bucket(perSecond: () => number, burst: number): Provider {
  let tokens = burst;
  let at = 0;
  return {
    call(nowMs) {
      tokens = Math.min(burst, tokens + ((nowMs - at) / 1000) * perSecond());
      at = nowMs;
      if (tokens >= 1) {
        tokens -= 1;
        return true;
      }
      return Math.max(1, Math.ceil((1 - tokens) / perSecond())) * 1000;
    },
  };
}

/** A fixed window of `perMinute` calls per clock minute; Retry-After until the next minute. */
function quota(perMinute: number): Provider {
  let minute = -1;
  let used = 0;
  return {
    call(nowMs) {
      const current = Math.floor(nowMs / 60_000);
      if (current !== minute) {
        minute = current;
        used = 0;
      }
      if (used < perMinute) {
        used++;
        return true;
      }
      return Math.max(1000, Math.ceil(((current + 1) * 60_000 - nowMs) / 1000) * 1000);
    },
  };
}

interface Second {
  atS: number;
  admitted: number;
  refused: number;
  rate: number;
}

/**
 * Runs the law against `provider` for `seconds` from `fromS`; the client always has work to send.
 * Returns each second's figures, and the law at the end.
 */
function run(
  provider: Provider,
  seconds: number,
  start: LawState = initialLaw(0),
  fromS = 0,
): { log: Second[]; law: LawState } {
  let law = start;
  let credit = 0;
  const log: Second[] = [];
  // What the law is told: each second, and at once after a step that met a 429.
  let stretch = { admitted: 0, refused: 0, attempted: 0, retryAfterMs: 0, fromMs: fromS * 1000 };
  let second = { admitted: 0, refused: 0 };
  for (let ms = fromS * 1000; ms < (fromS + seconds) * 1000; ms += 50) {
    // Unused credit is not banked beyond one step (a paced client sends evenly, never in bursts).
    credit = Math.min(credit + (grantedRate(law, ms) * 50) / 1000, 1 + grantedRate(law, ms) / 20);
    while (credit >= 1) {
      credit -= 1;
      stretch.attempted++;
      const answer = provider.call(ms);
      if (answer === true) {
        stretch.admitted++;
        second.admitted++;
      } else {
        stretch.refused++;
        second.refused++;
        stretch.retryAfterMs = Math.max(stretch.retryAfterMs, answer);
      }
    }
    const nowMs = ms + 50;
    if (stretch.refused > 0 || nowMs % 1000 === 0) {
      law = observe(law, {
        nowMs,
        admitted: stretch.admitted,
        refused: stretch.refused,
        attempted: stretch.attempted,
        spanMs: nowMs - stretch.fromMs,
        ...(stretch.refused > 0 ? { retryAfterMs: stretch.retryAfterMs } : {}),
      });
      stretch = { admitted: 0, refused: 0, attempted: 0, retryAfterMs: 0, fromMs: nowMs };
    }
    if (nowMs % 1000 === 0) {
      log.push({ atS: nowMs / 1000, ...second, rate: law.ratePerSecond });
      second = { admitted: 0, refused: 0 };
    }
  }
  return { log, law };
}

const simulate = (provider: Provider, seconds: number, start?: LawState): Second[] =>
  run(provider, seconds, start).log;

const total = (log: Second[], key: 'admitted' | 'refused'): number => log.reduce((sum, s) => sum + s[key], 0);
const between = (log: Second[], from: number, to: number): Second[] =>
  log.filter((second) => second.atS > from && second.atS <= to);

describe('the rate law against a per-second bucket', () => {
  it('converges within seconds to the provider rate, with few refusals', () => {
    const log = simulate(
      bucket(() => 50, 10),
      120,
    );
    // Within 15 s it admits at least 94% of the limit, and holds that.
    const settled = between(log, 15, 120);
    expect(total(settled, 'admitted') / settled.length).toBeGreaterThan(47);
    expect(total(settled, 'admitted') / settled.length).toBeLessThanOrEqual(50.5);
    // Refused: under 1% of the calls after discovery.
    const calls = total(settled, 'admitted') + total(settled, 'refused');
    expect(total(settled, 'refused') / calls).toBeLessThan(0.01);
  });

  it('returns close to the rate slow start was refused at within seconds', () => {
    // Slow start refused at 60/s, the use it last reported: the limit is under 60, anywhere. The
    // law falls well under it, then climbs back half the way a second, not by a probe's 2%.
    let law: LawState = { ...initialLaw(0), ratePerSecond: 60, previousRate: 40, usedPerSecond: 60 };
    law = observe(law, {
      nowMs: 10_000,
      admitted: 40,
      refused: 1,
      retryAfterMs: 1000,
      attempted: 0,
      spanMs: 0,
    });
    expect(law.ratePerSecond).toBeLessThan(40);
    for (let s = 11; s <= 15; s++) {
      law = observe(law, {
        nowMs: s * 1000,
        admitted: 0,
        refused: 0,
        attempted: law.ratePerSecond,
        spanMs: 1000,
      });
    }
    expect(law.ratePerSecond).toBeGreaterThan(50);
    expect(law.ratePerSecond).toBeLessThan(60);
  });

  it('judges a refusal by the burst it came in, not by the quiet second before it', () => {
    // Probing at 90/s while the run had little to send (1 call in the last second); then a backlog
    // goes out at the full rate and is refused half a second in. The limit is under 90, not under 1.
    const quiet: LawState = {
      ...initialLaw(0),
      phase: 'probing',
      ratePerSecond: 90,
      previousRate: 90,
      usedPerSecond: 1,
    };
    const law = observe(quiet, {
      nowMs: 10_500,
      admitted: 44,
      refused: 1,
      retryAfterMs: 1000,
      attempted: 45,
      spanMs: 500,
    });
    expect(law.ratePerSecond).toBeGreaterThan(70);
    expect(law.ceilingPerSecond).toBe(90);
  });

  it('follows a limit that drops and comes back', () => {
    let limit = 50;
    const provider = bucket(() => limit, 10);
    const first = run(provider, 60);
    limit = 20;
    const dropped = run(provider, 60, first.law, 60);
    limit = 50;
    const back = run(provider, 120, dropped.law, 120);
    // Down: within 10 s at most the new limit, and most of it.
    const low = between(dropped.log, 70, 120);
    expect(total(low, 'admitted') / low.length).toBeGreaterThan(18);
    expect(total(low, 'admitted') / low.length).toBeLessThanOrEqual(20.5);
    expect(total(low, 'refused') / (total(low, 'admitted') + total(low, 'refused'))).toBeLessThan(0.03);
    // Up again: past the old ceiling the probe steps double, and find the limit within 30 s.
    const high = between(back.log, 150, 240);
    expect(total(high, 'admitted') / high.length).toBeGreaterThan(47);
  });
});

describe('the rate law against a per-minute quota', () => {
  it('settles under the quota without a refusal storm', () => {
    const log = simulate(quota(1200), 600);
    // After the first two minutes: at least 85% of the quota, and a handful of refusals a minute at most.
    const settled = between(log, 120, 600);
    const perMinute = (total(settled, 'admitted') / settled.length) * 60;
    expect(perMinute).toBeGreaterThan(0.85 * 1200);
    expect(perMinute).toBeLessThanOrEqual(1200);
    expect(total(settled, 'refused') / (settled.length / 60)).toBeLessThan(5);
  });
});

describe('the rate law against a provider that refuses everything', () => {
  it('slows to the floor and waits out every Retry-After: never a tight loop', () => {
    const log = simulate({ call: () => 1000 }, 120);
    expect(log.at(-1)!.rate).toBe(FLOOR_PER_SECOND);
    const late = between(log, 60, 120);
    expect(total(late, 'refused')).toBeLessThanOrEqual(60 * FLOOR_PER_SECOND + 2);
  });
});

describe('a cap from the manifest', () => {
  it('never grants more than the cap, and says the rate is capped', () => {
    const log = simulate(
      bucket(() => 50, 10),
      60,
      initialLaw(0, 10),
    );
    expect(Math.max(...log.map((second) => second.rate))).toBe(10);
    expect(total(between(log, 10, 60), 'refused')).toBe(0);
  });
});

describe('nonsense in the reports', () => {
  it('takes a Retry-After that is no number as none, one of years as an hour, and a stretch of no time as no news', () => {
    const start = initialLaw(0);
    const report = { nowMs: 1000, admitted: 0, refused: 1, attempted: 1, spanMs: 1000 };
    const endless = observe(start, { ...report, retryAfterMs: Infinity });
    expect(endless.holdUntilMs).toBe(1000);
    expect(Number.isFinite(endless.ratePerSecond)).toBe(true);
    const years = observe(start, { ...report, retryAfterMs: 1e12 });
    expect(years.holdUntilMs).toBe(1000 + 3_600_000);
    const empty = observe(start, { nowMs: 5000, admitted: 0, refused: 0, attempted: 0, spanMs: 0 });
    expect(empty).toEqual(start);
  });
});

describe('a grant the workers use a little less of (calls spread unevenly over workers)', () => {
  it('keeps growing while nothing is refused: never shrinks towards what was used', () => {
    let law = observe(initialLaw(0), {
      nowMs: 1000,
      admitted: 1,
      refused: 1,
      attempted: 2,
      spanMs: 1000,
      retryAfterMs: 1000,
    });
    const start = law.ratePerSecond;
    let last = start;
    for (let s = 2; s <= 60; s += 1) {
      const used = 0.85 * law.ratePerSecond;
      law = observe(law, { nowMs: s * 1000, admitted: used, refused: 0, attempted: used, spanMs: 1000 });
      expect(law.ratePerSecond).toBeGreaterThanOrEqual(last);
      last = law.ratePerSecond;
    }
    expect(law.ratePerSecond).toBeGreaterThan(2 * start);
  });
});
