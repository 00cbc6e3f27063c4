// The pure parts of `pixelmill schedule create`: the spec from --cron/--timezone/--every and the
// catch-up window, the schedule's name and the API account its runs belong to; every mistake is
// one line saying what to write instead, and the command line's own errors are those lines.
import { describe, expect, it } from 'vitest';
import { isUserError } from '../common/errors.js';
import { apiAccountId } from '../common/api-account.js';
import { checkScheduleName, parseScheduleTimes, scheduledApi } from '../client/schedules.js';
import { buildProgram } from '../client/program.js';

function problem(body: () => unknown): string {
  try {
    body();
  } catch (error) {
    if (!isUserError(error)) throw error;
    expect(error.message).not.toContain('\n');
    return error.message;
  }
  throw new Error('no error');
}

describe('the spec', () => {
  it('takes cron with a time zone, UTC by default, and a one-hour catch-up window', () => {
    expect(parseScheduleTimes({ cron: '0 2 * * *', timezone: 'Europe/Berlin' })).toEqual({
      spec: { cronExpressions: ['0 2 * * *'], timezone: 'Europe/Berlin' },
      catchupWindowMs: 3_600_000,
      text: 'cron "0 2 * * *" in Europe/Berlin',
    });
    expect(parseScheduleTimes({ cron: '@daily', catchupWindow: '10m' })).toMatchObject({
      spec: { cronExpressions: ['@daily'] },
      catchupWindowMs: 600_000,
      text: 'cron "@daily" in UTC',
    });
  });

  it('takes an interval', () => {
    expect(parseScheduleTimes({ every: '1h30m' })).toMatchObject({
      spec: { intervals: [{ every: 5_400_000 }] },
      text: 'every 1h30m',
    });
  });

  it('refuses what it cannot mean, one line each', () => {
    expect(problem(() => parseScheduleTimes({}))).toMatch(/say when: --cron .* or --every 6h/);
    expect(problem(() => parseScheduleTimes({ cron: '0 2 * * *', every: '6h' }))).toMatch(/give one/);
    expect(problem(() => parseScheduleTimes({ cron: 'nightly' }))).toMatch(/not a cron expression/);
    expect(problem(() => parseScheduleTimes({ cron: 'TZ=UTC 0 2 * * *' }))).toMatch(/--timezone/);
    expect(problem(() => parseScheduleTimes({ cron: '0 2 * * *', timezone: 'Mars/Olympus' }))).toMatch(
      /not an IANA time zone/,
    );
    expect(problem(() => parseScheduleTimes({ every: '6h', timezone: 'UTC' }))).toMatch(
      /--timezone applies to --cron/,
    );
    expect(problem(() => parseScheduleTimes({ every: 'daily' }))).toMatch(/not a duration/);
    expect(problem(() => parseScheduleTimes({ every: '6h', catchupWindow: '5s' }))).toMatch(/10s or more/);
  });

  it('names schedules with what a Temporal id and a shell take', () => {
    expect(checkScheduleName('shop-nightly_2.0')).toBe('shop-nightly_2.0');
    expect(problem(() => checkScheduleName('shop nightly'))).toMatch(/must be 1-100 letters/);
  });
});

describe("the runs' API account", () => {
  const settings = { apiKeyEnv: 'ACME_KEY' };

  it("is the account of this environment's API and key, as `pixelmill worker` computes it", () => {
    const env = { PIXELMILL_API_BASE_URL: 'http://127.0.0.1:8787', ACME_KEY: 'sk-1' };
    expect(scheduledApi(settings, env)).toEqual({
      account: apiAccountId('http://127.0.0.1:8787', 'sk-1'),
      baseUrl: 'http://127.0.0.1:8787',
      emulated: false,
    });
  });

  it('needs an API that stays up, and a key or the account id', () => {
    expect(problem(() => scheduledApi(settings, {}))).toMatch(/long-lived workers .* `pixelmill emulator`/);
    expect(problem(() => scheduledApi(settings, { PIXELMILL_API_BASE_URL: 'http://x' }))).toMatch(
      /no API key .* ACME_KEY \(or PIXELMILL_API_KEY\), or pass --api-account/,
    );
    expect(problem(() => scheduledApi(settings, { PIXELMILL_API_BASE_URL: 'http://x' }, 'nope'))).toMatch(
      /not an account id/,
    );
  });
});

describe('the command line', () => {
  async function parse(args: string[]): Promise<string> {
    const program = buildProgram();
    program.configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    for (const command of program.commands) command.exitOverride();
    try {
      await program.parseAsync(['node', 'pixelmill', ...args]);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('parsed');
  }

  it('says what is missing before it reads anything or connects anywhere', async () => {
    expect(await parse(['schedule', 'create', 'nowhere.yaml'])).toBe(
      'say when: --cron "0 2 * * *" (with --timezone) or --every 6h',
    );
    expect(await parse(['schedule', 'create', 'nowhere.yaml', '--every', 'soon'])).toMatch(
      /^--every soon is not a duration/,
    );
    expect(await parse(['schedule', 'create', 'nowhere.yaml', '--every', '6h'])).toMatch(/nowhere\.yaml/);
  });
});
