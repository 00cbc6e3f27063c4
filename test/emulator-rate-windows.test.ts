// Per-minute windows beside the per-second token buckets (rate_limits.<class>.per_minute): a fixed
// window per key and class aligned to the clock's minute, real time whatever time_scale says; and
// limits changed on a running emulator through PUT /_emulator/rate-limits or setRateLimits().
import { describe, expect, it } from 'vitest';
import { UserError } from '../common/errors.js';
import { parseEmulatorConfigText, type RunningEmulator } from '../emulator/index.js';
import { call, ManualClock, startTestEmulator, type RawResponse } from './support/emulator.js';

const SUBMIT = '/v1/images/generations';
const LIMITS = '/_emulator/rate-limits';
const UNKNOWN_TASK = '/v1/tasks/task_00000000000000000000000000';
const accounts = [
  { id: 'acct_a', keys: [{ key: 'sk-a' }] },
  { id: 'acct_b', keys: [{ key: 'sk-b' }] },
];
const wide = { per_second: 1000, burst: 1000 };

/** A clock at `second` past a whole minute (the ManualClock's default start is one). */
const clockAt = (second: number) => new ManualClock(Date.UTC(2026, 0, 1, 0, 0, second));

async function startWith(rateLimits: object, clock: ManualClock) {
  const emulator = await startTestEmulator(
    { accounts, time_scale: 0.001, rate_limits: rateLimits },
    { clock },
  );
  return { emulator, ...clients(emulator) };
}

function clients(emulator: RunningEmulator) {
  const submit = (key = 'sk-a') => call(emulator.url, SUBMIT, { key, body: { prompt: 'x' } });
  const query = (key = 'sk-a') => call(emulator.url, UNKNOWN_TASK, { key });
  const batch = () => call(emulator.url, '/v1/tasks/batch', { key: 'sk-a', body: { task_ids: ['x'] } });
  /** The statuses of `count` submits in a row. */
  const submits = async (count: number, key = 'sk-a') => {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) statuses.push((await submit(key)).status);
    return statuses;
  };
  const putLimits = (body: unknown) => call(emulator.url, LIMITS, { method: 'PUT', body });
  return { submit, query, batch, submits, putLimits };
}

function expectLimited(response: RawResponse, retryAfter: number): void {
  expect(response.status, response.text).toBe(429);
  expect(response.headers['retry-after']).toBe(String(retryAfter));
  expect(response.json.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
  expect(response.json.error.message).toContain(`${retryAfter} s`);
}

describe('per-minute windows', () => {
  it('admits per_minute requests, then 429 until the minute turns, then admits again', async () => {
    const clock = clockAt(15);
    const { emulator, submit, query, submits } = await startWith(
      { submit: { ...wide, per_minute: 3 } },
      clock,
    );
    expect(await submits(3)).toEqual([200, 200, 200]);
    // The window is the clock's minute, not a minute from the first request: 45 s are left.
    expectLimited(await submit(), 45);
    clock.advance(44_500);
    expectLimited(await submit(), 1);
    // Other keys have their own window; queries (no per_minute) are not limited by the minute.
    expect(await submits(3, 'sk-b')).toEqual([200, 200, 200]);
    for (let i = 0; i < 5; i++) expect((await query()).status).toBe(404);
    clock.advance(500);
    // A new minute: the same burst again (the 429s of the last minute did not count).
    expect(await submits(4)).toEqual([200, 200, 200, 429]);
    expectLimited(await submit(), 60);
    expect(emulator.stats().requests[`POST ${SUBMIT}`]).toEqual({ '200': 9, '429': 4 });
  });

  it('limits GET and batch together, in real time whatever time_scale says', async () => {
    const clock = clockAt(0);
    const { query, batch, submits } = await startWith({ query: { ...wide, per_minute: 2 } }, clock);
    expect([(await query()).status, (await batch()).status]).toEqual([404, 200]);
    expectLimited(await query(), 60);
    clock.advance(59_000);
    expectLimited(await batch(), 1);
    clock.advance(1000);
    expect((await batch()).status).toBe(200);
    expect(await submits(5)).toEqual([200, 200, 200, 200, 200]);
  });

  it('applies both the bucket and the window, answering the longer wait', async () => {
    const clock = clockAt(10);
    const { submit, submits } = await startWith(
      { submit: { per_second: 1, burst: 2, per_minute: 4 } },
      clock,
    );
    expect(await submits(2)).toEqual([200, 200]);
    expectLimited(await submit(), 1); // the bucket is empty, the window has room
    clock.advance(1000);
    expect((await submit()).status).toBe(200);
    clock.advance(1000);
    expect((await submit()).status).toBe(200);
    // At :12 the bucket is empty (1 s) and the window full (48 s): the longer wait is said.
    expectLimited(await submit(), 48);
    clock.advance(1000);
    expectLimited(await submit(), 47); // a token is back, the window is still full
    clock.advance(47_000);
    expect(await submits(3)).toEqual([200, 200, 429]);
  });

  it('says the bucket wait when it is the longer one', async () => {
    const clock = clockAt(55);
    const { submit } = await startWith({ submit: { per_second: 0.125, burst: 1, per_minute: 1 } }, clock);
    expect((await submit()).status).toBe(200);
    clock.advance(3000);
    // At :58 the window resets in 2 s but the bucket needs 5 s more for its next token.
    expectLimited(await submit(), 5);
    clock.advance(2000);
    expectLimited(await submit(), 3);
    clock.advance(3000);
    expect((await submit()).status).toBe(200);
  });

  it('neither takes a token nor counts in the window for a request it refuses', async () => {
    const clock = clockAt(50);
    const { submit, submits } = await startWith(
      { submit: { per_second: 0.125, burst: 2, per_minute: 2 } },
      clock,
    );
    expect(await submits(2)).toEqual([200, 200]);
    clock.advance(8000);
    // :58: a token is back but the window is full; refusing must not spend that token.
    expectLimited(await submit(), 2);
    clock.advance(2000);
    expect(await submits(2)).toEqual([200, 429]);

    const otherClock = clockAt(0);
    const other = await startWith({ submit: { per_second: 0.125, burst: 1, per_minute: 2 } }, otherClock);
    expect((await other.submit()).status).toBe(200);
    expectLimited(await other.submit(), 8);
    otherClock.advance(8000);
    // The refusal by the bucket did not fill the window.
    expect((await other.submit()).status).toBe(200);
  });
});

describe('per_minute in the config', () => {
  it('reads per_minute from a file and rejects one that is not a whole number >= 1', () => {
    const config = parseEmulatorConfigText('rate_limits:\n  submit: { per_minute: 600 }\n', 'limits.yaml');
    expect(config.rate_limits.submit).toEqual({ per_second: 10, burst: 20, per_minute: 600 });
    expect(config.rate_limits.query).toEqual({ per_second: 50, burst: 100 });
    let error: unknown;
    try {
      parseEmulatorConfigText(
        'rate_limits:\n  submit: { per_minute: 0 }\n  query: { per_minute: 1.5 }\n',
        'bad.yaml',
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as UserError).problems).toEqual([
      expect.stringMatching(/^bad\.yaml:2:\d+ rate_limits\.submit\.per_minute: /),
      expect.stringMatching(/^bad\.yaml:3:\d+ rate_limits\.query\.per_minute: /),
    ]);
  });
});

describe('changing limits on a running emulator', () => {
  it('serves the limits in force and changes them mid-run, down then up, for the next request', async () => {
    const clock = clockAt(0);
    const { emulator, submit, submits, putLimits } = await startWith({ submit: wide }, clock);
    const initial = await call(emulator.url, LIMITS);
    expect(initial.status).toBe(200);
    expect(initial.json).toEqual({ submit: wide, query: { per_second: 50, burst: 100 } });
    expect(await submits(5)).toEqual([200, 200, 200, 200, 200]);

    // Down: the bucket keeps what it holds, cut to the new burst.
    const down = await putLimits({ submit: { per_second: 0.5, burst: 2 } });
    expect(down.status, down.text).toBe(200);
    expect(down.json).toEqual({
      submit: { per_second: 0.5, burst: 2 },
      query: { per_second: 50, burst: 100 },
    });
    expect(await submits(2)).toEqual([200, 200]);
    expectLimited(await submit(), 2);

    // A minute window added mid-minute counts what this minute already admitted (7 so far).
    clock.advance(10_000);
    const windowed = await putLimits({ submit: { per_minute: 8 } });
    expect(windowed.json.submit).toEqual({ per_second: 0.5, burst: 2, per_minute: 8 });
    expect((await submit()).status).toBe(200);
    expectLimited(await submit(), 50);

    // Up: a higher rate and burst refill from what the bucket holds, not a fresh full burst;
    // per_minute: null removes the window.
    const up = await putLimits({ submit: { per_second: 100, burst: 50, per_minute: null } });
    expect(up.json.submit).toEqual({ per_second: 100, burst: 50 });
    expect(await submits(2)).toEqual([200, 429]);
    clock.advance(100);
    expect(await submits(11)).toEqual([...Array<number>(10).fill(200), 429]);
    clock.advance(1000);
    expect(await submits(51)).toEqual([...Array<number>(50).fill(200), 429]);
    expect((await call(emulator.url, LIMITS)).json.submit).toEqual({ per_second: 100, burst: 50 });
  });

  it('settles what the old rate refilled before a new rate applies', async () => {
    const clock = clockAt(0);
    const { submit, submits, putLimits } = await startWith({ submit: { per_second: 1, burst: 10 } }, clock);
    expect(await submits(10)).toEqual(Array<number>(10).fill(200));
    clock.advance(2000);
    expect((await putLimits({ submit: { per_second: 0.125 } })).status).toBe(200);
    expect(await submits(2)).toEqual([200, 200]);
    expectLimited(await submit(), 8);
  });

  it('changes limits in-process with setRateLimits and reads them with rateLimits', async () => {
    const clock = clockAt(30);
    const { emulator, submit, query, submits } = await startWith({}, clock);
    expect(emulator.rateLimits()).toEqual({
      submit: { per_second: 10, burst: 20 },
      query: { per_second: 50, burst: 100 },
    });
    const limits = emulator.setRateLimits({ submit: { per_minute: 2 }, query: { burst: 1 } });
    expect(limits).toEqual({
      submit: { per_second: 10, burst: 20, per_minute: 2 },
      query: { per_second: 50, burst: 1 },
    });
    expect(emulator.rateLimits()).toEqual(limits);
    expect((await call(emulator.url, LIMITS)).json).toEqual(limits);
    expect(await submits(2)).toEqual([200, 200]);
    expectLimited(await submit(), 30);
    expect((await query()).status).toBe(404);
    expectLimited(await query(), 1);
    // The config the emulator started with is not rewritten.
    expect(emulator.config.rate_limits.submit).toEqual({ per_second: 10, burst: 20 });

    let error: unknown;
    try {
      emulator.setRateLimits({ submit: { per_second: 0 } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as UserError).code).toBe('emulator_rate_limits_invalid');
    expect((error as UserError).problems).toEqual([expect.stringMatching(/^submit\.per_second: /)]);
    expect(emulator.rateLimits()).toEqual(limits);
  });

  it('answers bad input with 400 and the error envelope, changing nothing', async () => {
    const { emulator, putLimits } = await startWith({}, clockAt(0));
    const before = (await call(emulator.url, LIMITS)).json;
    const cases: [unknown, string, RegExp][] = [
      ['{"submit":', 'invalid_json', /JSON/],
      [[], 'invalid_body', /object/],
      [{ upload: { per_second: 1 } }, 'invalid_rate_limits', /upload: unknown key/],
      [{ submit: { rate: 1 } }, 'invalid_rate_limits', /submit\.rate: unknown key/],
      [{ submit: { per_second: 0 } }, 'invalid_rate_limits', /submit\.per_second: /],
      [{ submit: { per_second: '10' } }, 'invalid_rate_limits', /submit\.per_second: /],
      [{ query: { burst: 0.5 } }, 'invalid_rate_limits', /query\.burst: /],
      [{ query: { per_minute: 1.5 } }, 'invalid_rate_limits', /query\.per_minute: /],
      [{ submit: null }, 'invalid_rate_limits', /submit: /],
      // One bad field refuses the whole change: the valid submit part is not applied either.
      [{ submit: { burst: 5 }, query: { per_minute: 0 } }, 'invalid_rate_limits', /query\.per_minute: /],
    ];
    for (const [body, code, message] of cases) {
      const response = await putLimits(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.json.error).toMatchObject({ type: 'invalid_request_error', code });
      expect(response.json.error.message).toMatch(message);
    }
    const both = await putLimits({ submit: { per_second: -1, extra: 1 } });
    expect(both.json.error.message).toMatch(
      /submit\.per_second: .*; submit\.extra: unknown key|submit\.extra: unknown key.*; submit\.per_second: /,
    );
    expect((await call(emulator.url, LIMITS)).json).toEqual(before);
    const wrongMethod = await call(emulator.url, LIMITS, { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('GET, PUT');
    expect(emulator.stats().requests[`PUT ${LIMITS}`]).toEqual({ '400': 11 });
  });
});
