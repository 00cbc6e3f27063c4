// POST /v1/tasks/batch: size limits (0, 1, 500, 501), per-id outcomes (task states, invalid_id,
// not_found for unknown and foreign ids, expired) in the order asked, and its 400s.
import { describe, expect, it } from 'vitest';
import { call, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';

const accounts = [
  { id: 'acct_a', keys: [{ key: 'sk-a' }] },
  { id: 'acct_b', keys: [{ key: 'sk-b' }] },
];
const limits = {
  submit: { per_second: 10_000, burst: 10_000 },
  query: { per_second: 10_000, burst: 10_000 },
};
const UNKNOWN = 'task_00000000000000000000000000';

describe('batch', () => {
  it('reports each id in the order asked: states, invalid_id, not_found (unknown and foreign), expired', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(
      {
        accounts,
        rate_limits: limits,
        result_ttl_seconds: 100,
        generation: { queue_seconds: [2, 2], seconds: { '1K': [10, 10] } },
      },
      { clock },
    );
    const submit = (key: string, body: object) => submitTask(emulator, key, body);
    const old = await submit('sk-a', { prompt: 'old' });
    clock.advance(200_000); // old: completed at 12 s, expired at 112 s
    const done = await submit('sk-a', { prompt: 'done' });
    const failed = await submit('sk-a', { prompt: 'forbidden words' });
    clock.advance(12_000);
    const processing = await submit('sk-a', { prompt: 'processing' });
    clock.advance(3_000);
    const pending = await submit('sk-a', { prompt: 'pending' });
    const foreign = await submit('sk-b', { prompt: 'theirs' });

    const ids = [pending, 'garbage', processing, done, UNKNOWN, failed, foreign, old, '', done.toLowerCase()];
    const response = await call(emulator.url, '/v1/tasks/batch', { key: 'sk-a', body: { task_ids: ids } });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      code: 200,
      data: [
        { id: pending, status: 'pending' },
        { id: 'garbage', status: 'invalid_id' },
        { id: processing, status: 'processing' },
        { id: done, status: 'completed' },
        { id: UNKNOWN, status: 'not_found' },
        { id: failed, status: 'failed' },
        { id: foreign, status: 'not_found' },
        { id: old, status: 'expired' },
        { id: '', status: 'invalid_id' },
        { id: done.toLowerCase(), status: 'invalid_id' },
      ],
    });
    // Only id and status, never result.
    for (const item of response.json.data) expect(Object.keys(item).sort()).toEqual(['id', 'status']);
  });

  it('accepts 1 and 500 ids, repeats included, and never loses an acknowledged task', async () => {
    const emulator = await startTestEmulator({ accounts, rate_limits: limits });
    const ids: string[] = [];
    for (let i = 0; i < 250; i++) ids.push(await submitTask(emulator, 'sk-a', { prompt: `p${i}` }));
    expect(new Set(ids).size).toBe(250);
    const one = await call(emulator.url, '/v1/tasks/batch', { key: 'sk-a', body: { task_ids: [ids[0]] } });
    expect(one.json.data).toHaveLength(1);
    const asked = [...ids, ...ids];
    const full = await call(emulator.url, '/v1/tasks/batch', { key: 'sk-a', body: { task_ids: asked } });
    expect(full.status).toBe(200);
    expect(full.json.data.map((item: { id: string }) => item.id)).toEqual(asked);
    for (const item of full.json.data) expect(['pending', 'processing']).toContain(item.status);
  });

  const invalid: [string, unknown, string][] = [
    ['0 ids', { task_ids: [] }, 'empty_task_ids'],
    ['501 ids', { task_ids: Array.from({ length: 501 }, () => UNKNOWN) }, 'too_many_task_ids'],
    ['no task_ids', { ids: [UNKNOWN] }, 'invalid_task_ids'],
    ['task_ids not an array', { task_ids: UNKNOWN }, 'invalid_task_ids'],
    ['a non-string id', { task_ids: [UNKNOWN, 42] }, 'invalid_task_ids'],
    ['a body that is not JSON', 'task_ids=1', 'invalid_json'],
    ['a body that is not an object', [UNKNOWN], 'invalid_body'],
  ];

  it.each(invalid)('answers %s with 400 %s', async (_, body, code) => {
    const emulator = await startTestEmulator({ accounts, rate_limits: limits });
    const response = await call(emulator.url, '/v1/tasks/batch?language=zh', { key: 'sk-a', body });
    expect(response.status).toBe(400);
    expect(response.json.error).toMatchObject({ type: 'invalid_request_error', code });
    expect(response.json.error.message).toMatch(/[\u4e00-\u9fff]/);
  });
});
