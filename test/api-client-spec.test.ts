// The client against the emulator for the spec's failure rows that need a particular account or
// moment: disabled and expired keys, expiry (GET, batch, result host) on a manual clock, batch
// edge cases, Retry-After as data, error languages, and keys that cannot even be sent.
import { onTestFinished, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  InvalidRequestError,
  NotFoundError,
  RateLimitError,
  ResultExpiredError,
} from '../api/index.js';
import { createImageApiClient, type ImageApiClient } from '../providers/apimart/index.js';
import type { EmulatorConfigOverrides, RunningEmulator } from '../emulator/index.js';
import { expectNoSecrets, rejection } from './support/assertions.js';
import { expectCatalogueText, ManualClock, startTestEmulator } from './support/emulator.js';

const KEY = 'sk-live-spec-owner';
const OTHER_KEY = 'sk-live-spec-other';
const accounts = [
  {
    id: 'acct_owner',
    keys: [
      { key: KEY },
      { key: 'sk-live-spec-disabled', status: 'disabled' as const },
      { key: 'sk-live-spec-expired', status: 'expired' as const },
    ],
  },
  { id: 'acct_other', keys: [{ key: OTHER_KEY }] },
];
/** Queue 1 s, generation 2 s at every resolution: terminal 3 s after submit. */
const fixed: EmulatorConfigOverrides = {
  accounts,
  generation: { queue_seconds: [1, 1], seconds: { '1K': [2, 2], '2K': [2, 2], '4K': [2, 2] } },
  rate_limits: { query: { per_second: 1_000, burst: 1_000 } },
};

async function setup(config: EmulatorConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestEmulator({ ...fixed, ...config }, { clock });
  return { clock, emulator, client: clientFor(emulator, KEY) };
}

function clientFor(emulator: RunningEmulator, apiKey: string): ImageApiClient {
  const client = createImageApiClient({ baseUrl: emulator.url, apiKey });
  onTestFinished(() => client.close());
  return client;
}

describe('the client against the emulator', () => {
  it.each([
    ['sk-live-spec-disabled', 'api_key_disabled'],
    ['sk-live-spec-expired', 'api_key_expired'],
  ] as const)('turns the key %s into a non-retryable AuthenticationError %s', async (key, apiCode) => {
    const { emulator } = await setup();
    const client = clientFor(emulator, key);
    for (const attempt of [
      client.submit({ prompt: 'x' }),
      client.getTask('task_00000000000000000000000000'),
      client.batchLookup(['task_00000000000000000000000000']),
    ]) {
      const error = await rejection(attempt);
      expect(error).toBeInstanceOf(AuthenticationError);
      expect(error).toMatchObject({ retryable: false, httpStatus: 401, apiCode });
      expectNoSecrets([error], [key]);
    }
    expect(emulator.stats().tasks_total).toBe(0);
  });

  it('sees a finished task expire 24 h after completion: GET 404 task_expired, batch expired, result gone', async () => {
    const { clock, client } = await setup();
    const [id = ''] = (await client.submit({ prompt: 'short-lived' })).taskIds;
    clock.advance(3_000);
    const task = await client.getTask(id);
    expect(task.status).toBe('completed');
    const url = task.result?.url[0] ?? '';
    (await client.download(url)).body.resume();

    clock.advance((task.result?.expires_at ?? 0) * 1000 - clock.now());
    const gone = await rejection(client.getTask(id, { language: 'zh' }));
    expect(gone).toBeInstanceOf(NotFoundError);
    expect(gone).toMatchObject({ retryable: false, httpStatus: 404, apiCode: 'task_expired' });
    expect((gone as Error).message).toContain('任务已过期。');
    expect(await client.batchLookup([id])).toEqual([{ id, status: 'expired' }]);
    const image = await rejection(client.download(url));
    expect(image).toBeInstanceOf(ResultExpiredError);
    expect(image).toMatchObject({ retryable: false, httpStatus: 404 });
  });

  it('looks up 1 and 500 ids in the order asked, with invalid, unknown, foreign and expired ids', async () => {
    const { clock, emulator, client } = await setup({ result_ttl_seconds: 10 });
    const [old = ''] = (await client.submit({ prompt: 'old' })).taskIds;
    clock.advance(60_000);
    const [theirs = ''] = (await clientFor(emulator, OTHER_KEY).submit({ prompt: 'theirs' })).taskIds;
    const [mine = ''] = (await client.submit({ prompt: 'mine' })).taskIds;
    expect(await client.batchLookup([mine])).toEqual([{ id: mine, status: 'pending' }]);

    const special = [old, 'not-an-id', 'task_00000000000000000000000000', theirs, mine];
    const ids = Array.from({ length: 500 }, (_, i) => special[i % special.length] ?? '');
    const items = await client.batchLookup(ids);
    expect(items.map((item) => item.id)).toEqual(ids);
    expect(items.slice(0, 5).map((item) => item.status)).toEqual([
      'expired',
      'invalid_id',
      'not_found',
      'not_found',
      'pending',
    ]);
    for (const count of [0, 501]) {
      const refused = await rejection(client.batchLookup(Array.from({ length: count }, () => mine)));
      expect(refused).toBeInstanceOf(InvalidRequestError);
    }
    expect(emulator.stats().requests['POST /v1/tasks/batch']).toEqual({ '200': 2 });
  });

  it('carries Retry-After of a 429 as retryAfterMs', async () => {
    const { client } = await setup({ rate_limits: { submit: { per_second: 0.25, burst: 1 } } });
    await client.submit({ prompt: 'first' });
    const limited = await rejection(client.submit({ prompt: 'second' }));
    expect(limited).toBeInstanceOf(RateLimitError);
    expect(limited).toMatchObject({ retryable: true, retryAfterMs: 4_000, apiCode: 'rate_limit_exceeded' });
  });

  it.each([
    [{ prompt: '  ' }, 'empty_prompt'],
    [{ prompt: 'x', n: 5 }, 'invalid_n'],
    [{ prompt: 'x', model: 'dall-e-3' }, 'invalid_model'],
    [{ prompt: 'x', size: '1024x1024' }, 'invalid_size'],
  ] as const)('turns the 400 of %j into a BadRequestError %s in the submit language', async (body, code) => {
    const { client } = await setup();
    for (const language of ['ko', 'en'] as const) {
      const error = await rejection(client.submit({ ...body, language }));
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error).toMatchObject({ retryable: false, httpStatus: 400, apiCode: code });
      const said = (error as Error).message.replace(
        /^POST \/v1\/images\/generations failed with 400 \w+: /,
        '',
      );
      expectCatalogueText(said, code, language);
    }
  });

  it('reads a failed task in the language asked, and the submit language without one', async () => {
    const { clock, client } = await setup({ generation: { ...fixed.generation, failure_rate: 1 } });
    const [id = ''] = (await client.submit({ prompt: 'unlucky', language: 'ja' })).taskIds;
    clock.advance(3_000);
    expectCatalogueText((await client.getTask(id)).error?.message, 'generation_failed', 'ja');
    expectCatalogueText(
      (await client.getTask(id, { language: 'zh' })).error?.message,
      'generation_failed',
      'zh',
    );
  });

  it('refuses a key that cannot go into a header, without showing it', async () => {
    const { emulator } = await setup();
    const key = 'sk-live-broken\r\nX-Injected: 1';
    const error = await rejection(clientFor(emulator, key).getTask('task_00000000000000000000000000'));
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({ retryable: false });
    expectNoSecrets([error], ['sk-live-broken']);
    expect(emulator.stats().requests).toEqual({});
  });
});
