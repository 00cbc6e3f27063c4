// The governor's bookkeeping (governor/book.ts) and its words (governor/describe.ts), without a
// server: reports of several workers summed, a 429 acted on at once, state carried over
// continue-as-new, malformed reports refused, a run's caps over the account's rates.
import { describe, expect, it } from 'vitest';
import { GovernorBook, initialGovernorState, REPORTER_FRESH_MS } from '../governor/book.js';
import { describeRunRates, reportProblem, runRates } from '../governor/describe.js';
import { INITIAL_PER_SECOND } from '../governor/rate-law.js';
import type { GovernorReport } from '../governor/types.js';

const used = (worker: string, attempted: number, refused = 0, retryAfterMs?: number): GovernorReport => ({
  worker,
  groups: {
    submit: {
      attempted,
      admitted: attempted - refused,
      refused,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    },
  },
});

describe('the governor book', () => {
  it('judges the use of the rate on every worker together: two halves make a used rate', () => {
    const book = new GovernorBook(initialGovernorState(0));
    // Each worker alone uses half the starting rate; together all of it, and the rate grows.
    book.report(used('a', INITIAL_PER_SECOND / 2), 500);
    book.report(used('b', INITIAL_PER_SECOND / 2), 600);
    book.report(used('a', INITIAL_PER_SECOND / 2), 1000);
    book.report(used('b', INITIAL_PER_SECOND / 2), 1100);
    expect(book.grants(1100).submit.ratePerSecond).toBeGreaterThan(INITIAL_PER_SECOND);
    expect(book.view('acct', 1100).workers).toBe(2);
  });

  it("keeps the queries' rate up with the submits' use until the queries meet their own limit", () => {
    const book = new GovernorBook(initialGovernorState(0));
    // Submits at 40/s while no task has finished: no query yet, but every submit will need its GET.
    for (let ms = 1000; ms <= 3000; ms += 1000) book.report(used('a', 40), ms);
    expect(book.grants(3000).query.ratePerSecond).toBe(40);
    // The queries' first 429 ends their slow start: from then on their own law alone sets the rate.
    const refused: GovernorReport = {
      worker: 'a',
      groups: { query: { attempted: 40, admitted: 39, refused: 1, retryAfterMs: 1000 } },
    };
    book.report(refused, 3500);
    const after = book.grants(3500).query.ratePerSecond;
    expect(after).toBeLessThan(40);
    for (let ms = 4000; ms <= 5000; ms += 1000) book.report(used('a', 60), ms);
    expect(book.grants(5000).query.ratePerSecond).toBeLessThan(60);
  });

  it('slows every worker at the first 429, without waiting for the second', () => {
    const book = new GovernorBook(initialGovernorState(0));
    for (let ms = 1000; ms <= 8000; ms += 1000) book.report(used('a', 100), ms);
    const before = book.grants(8000).submit.ratePerSecond;
    book.report(used('a', 3, 1, 1000), 8100);
    const after = book.grants(8100).submit;
    expect(after.ratePerSecond).toBeLessThan(before);
    expect(after.source).toBe('retry-after');
    expect(after.sinceMs).toBe(8100);
  });

  it('holds every worker for a long Retry-After (a quota per minute), and says until when', () => {
    const book = new GovernorBook(initialGovernorState(0));
    book.report(used('a', 10, 1, 45_000), 5000);
    expect(book.grants(5000).submit.holdUntilMs).toBe(50_000);
    expect(book.grants(50_000).submit.holdUntilMs).toBe(0);
  });

  it('carries its state over continue-as-new unchanged', () => {
    const book = new GovernorBook(initialGovernorState(0));
    for (let ms = 1000; ms <= 5000; ms += 1000) book.report(used('a', 100), ms);
    const carried = new GovernorBook(JSON.parse(JSON.stringify(book.state())));
    expect(carried.grants(5000)).toEqual(book.grants(5000));
  });

  it('shares a rate among the workers calling lately: one that died stops counting within seconds', () => {
    const book = new GovernorBook(initialGovernorState(0));
    book.report(used('a', 5), 1000);
    book.report(used('b', 5), 1200);
    expect(book.grants(1200).submit.workers).toBe(2);
    // A report without calls of a group (a worker that only looks up, or a run joining) is no caller.
    book.report({ worker: 'c', groups: { query: { attempted: 3, admitted: 3, refused: 0 } } }, 1300);
    expect(book.grants(1300).submit.workers).toBe(2);
    expect(book.grants(1300).query.workers).toBe(1);
    // b was SIGKILLed: a's next reports no longer count it.
    book.report(used('a', 5), 2000);
    book.report(used('a', 5), 4500);
    expect(book.grants(4500).submit.workers).toBe(1);
  });

  it('forgets workers that stopped reporting', () => {
    const book = new GovernorBook(initialGovernorState(0));
    book.report(used('a', 1), 1000);
    book.report(used('b', 1), 2000);
    book.report(used('b', 1), 2000 + REPORTER_FRESH_MS + 1);
    expect(book.view('acct', 2000 + REPORTER_FRESH_MS + 1).workers).toBe(1);
  });
});

describe('reports the governor refuses', () => {
  it.each([
    [{ worker: 'a', groups: { submit: { attempted: -1, admitted: 0, refused: 0 } } }, 'submit.attempted'],
    [
      { worker: 'a', groups: { upload: { attempted: 1, admitted: 1, refused: 0 } } },
      'unknown endpoint group',
    ],
    [
      { worker: 'a', groups: { query: { attempted: 1, admitted: 1, refused: 0, retryAfterMs: -5 } } },
      'retryAfterMs',
    ],
    [{ groups: {} }, 'names its worker'],
  ])('%j', (report, problem) => {
    expect(reportProblem(report as GovernorReport)).toContain(problem);
  });

  it('takes a well-formed one', () => {
    expect(reportProblem(used('a', 3, 1, 1000))).toBeUndefined();
  });
});

describe("a run's rates", () => {
  it("are the account's, under the run's caps, in one vocabulary", () => {
    const book = new GovernorBook(initialGovernorState(0));
    for (let ms = 1000; ms <= 6000; ms += 1000) book.report(used('a', 100), ms);
    const view = book.view('acct', 6000);
    const rates = runRates(view, { submit: 3 }, 6000);
    expect(rates).toMatchObject({ mode: 'auto', submit: { perSecond: 3, source: 'capped' } });
    if (rates.mode !== 'auto') throw new Error('auto');
    expect(rates.query.perSecond).toBe(view.groups.query.ratePerSecond);
    expect(describeRunRates(rates)).toMatch(
      /^submits 3\/s \(capped by the manifest\), lookups .*\(discovering\)$/,
    );
    expect(describeRunRates({ mode: 'fixed', requestsPerSecond: 5 })).toBe('5/s (fixed)');
  });
});
