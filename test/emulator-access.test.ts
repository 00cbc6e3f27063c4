// Who may call what, and how often: 401 for missing/unknown/disabled/expired keys, 403 for another
// account's task, 429 with Retry-After per key and class, injected 5xx, unknown routes and methods.
import { describe, expect, it } from 'vitest';
import { call, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';

const SUBMIT = '/v1/images/generations';
const accounts = [
  {
    id: 'acct_a',
    webhook_secret: 'whsec_a',
    keys: [
      { key: 'sk-a' },
      { key: 'sk-a-off', status: 'disabled' as const },
      { key: 'sk-a-old', status: 'expired' as const },
    ],
  },
  { id: 'acct_b', keys: [{ key: 'sk-b' }] },
];

describe('authentication', () => {
  const cases: [string, Record<string, string>, string][] = [
    ['no Authorization header', {}, 'missing_api_key'],
    ['an empty Authorization header', { authorization: '' }, 'missing_api_key'],
    ['a Basic scheme', { authorization: 'Basic c2stYQ==' }, 'invalid_api_key'],
    ['an unknown key', { authorization: 'Bearer sk-nobody' }, 'invalid_api_key'],
    ['a disabled key', { authorization: 'Bearer sk-a-off' }, 'api_key_disabled'],
    ['an expired key', { authorization: 'Bearer sk-a-old' }, 'api_key_expired'],
  ];

  it.each(cases)(
    'answers %s with 401 %s on every endpoint, never echoing the key',
    async (_, headers, code) => {
      const emulator = await startTestEmulator({ accounts });
      const requests = [
        call(emulator.url, SUBMIT, { headers, body: { prompt: 'x' } }),
        call(emulator.url, '/v1/tasks/task_00000000000000000000000000', { headers }),
        call(emulator.url, '/v1/tasks/batch', { headers, body: { task_ids: ['x'] } }),
      ];
      for (const response of await Promise.all(requests)) {
        expect(response.status).toBe(401);
        expect(response.json.error).toMatchObject({ type: 'authentication_error', code });
        expect(response.text).not.toMatch(/sk-/);
      }
      expect(emulator.stats().tasks_total).toBe(0);
    },
  );

  it('accepts the bearer scheme in any case', async () => {
    const emulator = await startTestEmulator({ accounts });
    const response = await call(emulator.url, SUBMIT, {
      headers: { authorization: 'bearer sk-a' },
      body: { prompt: 'x' },
    });
    expect(response.status).toBe(200);
  });

  it("answers 403 for another account's task and 200 for the owner's other key", async () => {
    const emulator = await startTestEmulator({
      accounts: [{ id: 'acct_a', keys: [{ key: 'sk-a' }, { key: 'sk-a2' }] }, accounts[1]!],
    });
    const id = await submitTask(emulator, 'sk-a', { prompt: 'mine' });
    const foreign = await call(emulator.url, `/v1/tasks/${id}?language=zh`, { key: 'sk-b' });
    expect(foreign.status).toBe(403);
    expect(foreign.json.error).toMatchObject({
      type: 'permission_error',
      code: 'task_forbidden',
      message: '无权访问此任务。',
    });
    expect((await call(emulator.url, `/v1/tasks/${id}`, { key: 'sk-a2' })).status).toBe(200);
  });

  it('writes a 401 in the language of the submit body', async () => {
    const emulator = await startTestEmulator({ accounts });
    const response = await call(emulator.url, SUBMIT, { body: { prompt: 'x', language: 'ja' } });
    expect(response.json.error.message).toBe(
      "API キーが指定されていません。'Authorization: Bearer <API_KEY>' ヘッダーを送信してください。",
    );
  });
});

describe('rate limits', () => {
  it('answers 429 with Retry-After once a key has spent its submit burst, and refills in real time', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(
      { accounts, rate_limits: { submit: { per_second: 0.5, burst: 2 } } },
      { clock },
    );
    const submit = (key: string, language?: string) =>
      call(emulator.url, SUBMIT, { key, body: { prompt: 'x', language } });
    expect((await submit('sk-a')).status).toBe(200);
    expect((await submit('sk-a')).status).toBe(200);
    const limited = await submit('sk-a', 'ko');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('2');
    expect(limited.json.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(limited.json.error.message).toContain('2초');
    // Another key has its own bucket; queries have their own class.
    expect((await submit('sk-b')).status).toBe(200);
    expect(
      (await call(emulator.url, '/v1/tasks/task_00000000000000000000000000', { key: 'sk-a' })).status,
    ).toBe(404);
    // A rejected request takes no token: after 2 s exactly one more is allowed.
    clock.advance(1000);
    expect((await submit('sk-a')).headers['retry-after']).toBe('1');
    clock.advance(1000);
    expect((await submit('sk-a')).status).toBe(200);
    expect((await submit('sk-a')).status).toBe(429);
    expect(emulator.stats().requests[`POST ${SUBMIT}`]).toEqual({ '200': 4, '429': 3 });
  });

  it('limits GET and batch together as the query class, rounding Retry-After up to whole seconds', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(
      { accounts, rate_limits: { query: { per_second: 4, burst: 3 } } },
      { clock },
    );
    const get = () => call(emulator.url, '/v1/tasks/task_00000000000000000000000000', { key: 'sk-a' });
    const batch = () => call(emulator.url, '/v1/tasks/batch', { key: 'sk-a', body: { task_ids: ['a'] } });
    expect([(await get()).status, (await batch()).status, (await get()).status]).toEqual([404, 200, 404]);
    const limited = await batch();
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('1');
    expect((await call(emulator.url, SUBMIT, { key: 'sk-a', body: { prompt: 'x' } })).status).toBe(200);
  });

  it('checks authentication before the rate limit', async () => {
    const emulator = await startTestEmulator({
      accounts,
      rate_limits: { submit: { per_second: 1, burst: 1 } },
    });
    for (let i = 0; i < 3; i++)
      expect((await call(emulator.url, SUBMIT, { key: 'sk-nobody', body: { prompt: 'x' } })).status).toBe(
        401,
      );
    expect((await call(emulator.url, SUBMIT, { key: 'sk-a', body: { prompt: 'x' } })).status).toBe(200);
  });
});

describe('injected server faults', () => {
  it('answers every API request with 500/502/503 and the error envelope, creating nothing', async () => {
    const emulator = await startTestEmulator({
      accounts,
      faults: { server_error_rate: 1 },
      rate_limits: { submit: { per_second: 100, burst: 100 } },
    });
    const statuses = new Set<number>();
    for (let i = 0; i < 30; i++) {
      const response = await call(emulator.url, SUBMIT, {
        key: 'sk-a',
        body: { prompt: `p${i}`, language: 'zh' },
      });
      statuses.add(response.status);
      expect(response.json.error.type).toBe('server_error');
      expect(['internal_error', 'bad_gateway', 'service_unavailable']).toContain(response.json.error.code);
      expect(response.json.error.message).toMatch(/请重试/);
    }
    expect([...statuses].sort()).toEqual([500, 502, 503]);
    expect(emulator.stats()).toMatchObject({ tasks_total: 0, credits_charged: 0 });
    expect(
      (await call(emulator.url, '/v1/tasks/batch', { key: 'sk-a', body: { task_ids: ['x'] } })).status,
    ).toBeGreaterThanOrEqual(500);
    // Authentication still comes first, and the emulator's own endpoints are never faulted.
    expect((await call(emulator.url, SUBMIT, { body: { prompt: 'x' } })).status).toBe(401);
    expect((await call(emulator.url, '/_emulator/stats')).status).toBe(200);
  });

  it('faults only a share of requests at a partial rate, reproducibly for a seed', async () => {
    const run = async () => {
      const emulator = await startTestEmulator({
        accounts,
        seed: 7,
        faults: { server_error_rate: 0.3 },
        rate_limits: { query: { per_second: 1000, burst: 1000 } },
      });
      const statuses: number[] = [];
      for (let i = 0; i < 60; i++)
        statuses.push(
          (await call(emulator.url, '/v1/tasks/task_00000000000000000000000000', { key: 'sk-a' })).status,
        );
      return statuses;
    };
    const first = await run();
    const faulted = first.filter((status) => status >= 500).length;
    expect(faulted).toBeGreaterThan(5);
    expect(faulted).toBeLessThan(40);
    expect(await run()).toEqual(first);
  });
});

describe('routing', () => {
  it('answers unknown paths with 404 route_not_found and wrong methods with 405', async () => {
    const emulator = await startTestEmulator({ accounts });
    const unknown = await call(emulator.url, '/v2/images/generations', {
      key: 'sk-a',
      body: { prompt: 'x' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatchObject({ type: 'not_found_error', code: 'route_not_found' });
    const wrong = await call(emulator.url, SUBMIT, { key: 'sk-a' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('POST');
    expect(wrong.json.error.code).toBe('method_not_allowed');
    expect((await call(emulator.url, '/v1/tasks/batch', { key: 'sk-a' })).status).toBe(405);
    expect(
      (
        await call(emulator.url, '/v1/tasks/task_00000000000000000000000000', {
          method: 'DELETE',
          key: 'sk-a',
        })
      ).headers.allow,
    ).toBe('GET');
  });
});
