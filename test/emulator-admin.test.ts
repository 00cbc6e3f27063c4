// The emulator's own endpoints: /_emulator/stats (and RunningEmulator.stats()), the NDJSON
// ground truth of tasks, and the request log with since_ms, which names keys but never shows them.
import { describe, expect, it } from 'vitest';
import { call, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';

const accounts = [
  { id: 'acct_a', credits: 100, keys: [{ key: 'sk-a-first' }, { key: 'sk-a-second' }] },
  { id: 'acct_b', keys: [{ key: 'sk-b' }] },
];
const SUBMIT = '/v1/images/generations';
const ndjson = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

describe('emulator endpoints', () => {
  it('counts requests by route and status, tasks by state and credits charged', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(
      {
        accounts,
        generation: { queue_seconds: [1, 1], seconds: { '1K': [1, 1], '2K': [5, 5] }, failure_rate: 0 },
      },
      { clock },
    );
    const a = await submitTask(emulator, 'sk-a-first', { prompt: 'one', n: 3 });
    await call(emulator.url, SUBMIT, { key: 'sk-a-second', body: { prompt: 'two', resolution: '2K' } });
    await call(emulator.url, SUBMIT, { key: 'sk-b', body: { prompt: 'forbidden three' } });
    await call(emulator.url, SUBMIT, { key: 'sk-a-first', body: { prompt: '' } });
    await call(emulator.url, SUBMIT, { body: { prompt: 'x' } });
    await call(emulator.url, `/v1/tasks/${a}`, { key: 'sk-a-first' });
    await call(emulator.url, `/v1/tasks/${a}`, { key: 'sk-b' });
    await call(emulator.url, '/nowhere');
    clock.advance(2000);

    const stats = (await call(emulator.url, '/_emulator/stats')).json;
    expect(stats).toEqual({
      requests: {
        'POST /v1/images/generations': { '200': 3, '400': 1, '401': 1 },
        'GET /v1/tasks/{id}': { '200': 1, '403': 1 },
        'GET (unmatched)': { '404': 1 },
      },
      tasks: { pending: 0, processing: 1, completed: 1, failed: 1, expired: 0 },
      webhooks: { delivered: 0, retryable_failure: 0, rejected: 0, gave_up: 0 },
      credits_charged: 3 + 2,
      tasks_total: 3,
      idempotent_replays: 0,
      reference_images_fetched: 0,
    });
    expect(emulator.stats()).toMatchObject({ tasks_total: 3, credits_charged: 5 });
    expect((await call(emulator.url, '/_emulator/stats')).json.requests['GET /_emulator/stats']).toEqual({
      '200': 1,
    });
  });

  it('serves the ground truth of every task as NDJSON', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(
      { accounts, generation: { queue_seconds: [1, 1], seconds: { '1K': [1, 1], '4K': [9, 9] } } },
      { clock },
    );
    const t0 = clock.now();
    const first = await submitTask(emulator, 'sk-a-first', { prompt: 'same prompt', size: '4:5' });
    const second = await submitTask(emulator, 'sk-b', { prompt: 'same prompt', resolution: '4K', n: 2 });
    clock.advance(2000);
    const response = await call(emulator.url, '/_emulator/tasks');
    expect(response.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(ndjson(response.text)).toEqual([
      {
        id: first,
        account: 'acct_a',
        prompt: 'same prompt',
        n: 1,
        size: '4:5',
        resolution: '1K',
        status: 'completed',
        expired: false,
        submitted_at_ms: t0,
        completed_at_ms: t0 + 2000,
        credits_cost: 1,
      },
      {
        id: second,
        account: 'acct_b',
        prompt: 'same prompt',
        n: 2,
        size: '1:1',
        resolution: '4K',
        status: 'processing',
        expired: false,
        submitted_at_ms: t0,
        completed_at_ms: null,
        credits_cost: 8,
      },
    ]);
  });

  it('logs requests with key positions, never key values, filtered by since_ms', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator({ accounts }, { clock });
    const t0 = clock.now();
    await call(emulator.url, SUBMIT, { key: 'sk-a-second', body: { prompt: 'x' } });
    clock.advance(1500);
    await call(emulator.url, '/v1/tasks/task_00000000000000000000000000', { key: 'sk-b' });
    await call(emulator.url, '/v1/tasks/task_00000000000000000000000000', { key: 'sk-unknown' });

    const all = await call(emulator.url, '/_emulator/requests');
    expect(all.text).not.toMatch(/sk-/);
    expect(ndjson(all.text)).toEqual([
      { t_ms: t0, method: 'POST', route: '/v1/images/generations', status: 200, key_id: 'acct_a/1' },
      { t_ms: t0 + 1500, method: 'GET', route: '/v1/tasks/{id}', status: 404, key_id: 'acct_b/0' },
      { t_ms: t0 + 1500, method: 'GET', route: '/v1/tasks/{id}', status: 401, key_id: null },
    ]);
    const recent = ndjson((await call(emulator.url, `/_emulator/requests?since_ms=${t0 + 1}`)).text);
    expect(recent.map((entry) => entry.status)).toEqual([404, 401, 200]);
    expect(recent[2].route).toBe('/_emulator/requests');
  });

  it('keeps logging past its initial capacity, in order', async () => {
    const emulator = await startTestEmulator({
      accounts,
      rate_limits: { query: { per_second: 100_000, burst: 100_000 } },
    });
    const total = 5000;
    for (let i = 0; i < total; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, () => call(emulator.url, '/v1/tasks/nope', { key: 'sk-b' })),
      );
    }
    const entries = ndjson((await call(emulator.url, '/_emulator/requests')).text);
    expect(entries.filter((entry) => entry.route === '/v1/tasks/{id}')).toHaveLength(total);
    const times = entries.map((entry) => entry.t_ms as number);
    expect(times).toEqual([...times].sort((x, y) => x - y));
  });
});

describe('request log ring buffer', () => {
  it('keeps only the newest entries once full, oldest first', async () => {
    const { RequestStats } = await import('../emulator/apimart/stats.js');
    const stats = new RequestStats((index) => `acct/${index}`, 5);
    const label = stats.labelId('GET', '/x');
    for (let t = 1; t <= 12; t++) stats.record(label, 200, t % 2 === 0 ? 0 : -1, t);
    const entries = [...stats.requestsSince(0)];
    expect(entries.map((entry) => entry.t_ms)).toEqual([8, 9, 10, 11, 12]);
    expect(entries.map((entry) => entry.key_id)).toEqual(['acct/0', null, 'acct/0', null, 'acct/0']);
    expect([...stats.requestsSince(11)].map((entry) => entry.t_ms)).toEqual([11, 12]);
    expect(stats.requestCounts()).toEqual({ 'GET /x': { '200': 12 } });
  });
});
