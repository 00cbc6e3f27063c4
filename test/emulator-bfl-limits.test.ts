// The limits of the BFL emulator: 24 active tasks per account (429 on the 25th, a slot freed when
// a task ends, stuck tasks keeping theirs), fewer for flux-kontext-max, per key by the knob,
// Retry-After by the knob, limits changed on a running emulator; and credits: 402 when the
// balance is below the cost, refunds of moderated and failed tasks, /v1/credits, billing stats.
import { describe, expect, it } from 'vitest';
import type { BflConfigOverrides } from '../emulator/bfl/index.js';
import { bfl, DEMO_BFL_KEY, fixed, ManualClock, poll, startTestBfl, submit } from './support/emulator-bfl.js';

async function setup(config: BflConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestBfl(fixed(config), { clock });
  return { clock, emulator };
}

const post = (emulator: { url: string }, model: string, body: object, key = DEMO_BFL_KEY) =>
  bfl(emulator.url, `/v1/${model}`, { key, body });

describe('active tasks', () => {
  it('refuses the 25th active task with 429, and accepts again once one has ended', async () => {
    const { clock, emulator } = await setup();
    const answers = [];
    for (let i = 0; i < 24; i++)
      answers.push(await submit(emulator, 'flux-pro-1.1', { prompt: `item ${i}` }));
    const refused = await post(emulator, 'flux-pro-1.1', { prompt: 'one too many' });
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({
      detail: 'You have reached the limit of 24 active tasks. Wait for one of your tasks to finish.',
    });
    expect(refused.headers['retry-after']).toBeUndefined();
    // Other models count towards the same 24.
    expect((await post(emulator, 'flux-dev', { prompt: 'x' })).status).toBe(429);
    clock.advance(11_999);
    expect((await post(emulator, 'flux-pro-1.1', { prompt: 'still full' })).status).toBe(429);
    clock.advance(1);
    expect((await poll(answers[0]!.polling_url)).json.status).toBe('Ready');
    for (let i = 0; i < 24; i++) await submit(emulator, 'flux-pro-1.1', { prompt: `second wave ${i}` });
    expect((await post(emulator, 'flux-pro-1.1', { prompt: 'full again' })).status).toBe(429);
    const stats = emulator.stats();
    expect(stats.requests['POST /v1/{model}']).toEqual({ '200': 48, '429': 4 });
    expect(stats.peak_active).toEqual({ acct_demo: 24 });
    expect(stats.tasks_total).toBe(48);
  });

  it('limits flux-kontext-max to 6 active tasks, beside the overall 24', async () => {
    const { emulator } = await setup();
    for (let i = 0; i < 6; i++) await submit(emulator, 'flux-kontext-max', { prompt: `edit ${i}` });
    const refused = await post(emulator, 'flux-kontext-max', { prompt: 'seventh' });
    expect([refused.status, refused.json.detail]).toEqual([
      429,
      'You have reached the limit of 6 active tasks. Wait for one of your tasks to finish.',
    ]);
    await submit(emulator, 'flux-kontext-pro', { prompt: 'another model is fine' });
  });

  it('counts per key with limits.scope: key, per account by default', async () => {
    const accounts = [{ id: 'team', keys: [{ key: 'k1' }, { key: 'k2' }] }];
    const shared = await setup({ accounts, limits: { active_tasks: 2 } });
    await submit(shared.emulator, 'flux-pro-1.1', { prompt: 'a' }, 'k1');
    await submit(shared.emulator, 'flux-pro-1.1', { prompt: 'b' }, 'k2');
    expect((await post(shared.emulator, 'flux-pro-1.1', { prompt: 'c' }, 'k2')).status).toBe(429);
    const perKey = await setup({ accounts, limits: { active_tasks: 2, scope: 'key' } });
    for (const key of ['k1', 'k1', 'k2', 'k2'])
      await submit(perKey.emulator, 'flux-pro-1.1', { prompt: key }, key);
    expect((await post(perKey.emulator, 'flux-pro-1.1', { prompt: 'c' }, 'k1')).status).toBe(429);
  });

  it('sends Retry-After when limits.retry_after_seconds is set', async () => {
    const { emulator } = await setup({ limits: { active_tasks: 1, retry_after_seconds: 5 } });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'a' });
    const refused = await post(emulator, 'flux-pro-1.1', { prompt: 'b' });
    expect([refused.status, refused.headers['retry-after']]).toEqual([429, '5']);
  });

  it('keeps a stuck task in its slot forever', async () => {
    const { clock, emulator } = await setup({ limits: { active_tasks: 1 }, faults: { stuck_task_rate: 1 } });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'stuck' });
    clock.advance(7 * 24 * 3_600_000);
    expect((await post(emulator, 'flux-pro-1.1', { prompt: 'blocked' })).status).toBe(429);
  });

  it('changes the limits of a running emulator through PUT /_emulator/limits and setLimits', async () => {
    const { emulator } = await setup({ limits: { active_tasks: 1 } });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'a' });
    expect((await post(emulator, 'flux-pro-1.1', { prompt: 'b' })).status).toBe(429);
    const put = await bfl(emulator.url, '/_emulator/limits', {
      method: 'PUT',
      body: { active_tasks: 3, max_active: { 'flux-dev': 1, 'flux-kontext-max': null } },
    });
    expect(put.status).toBe(200);
    expect(put.json).toEqual({
      active_tasks: 3,
      scope: 'account',
      retry_after_seconds: null,
      max_active: { 'flux-dev': 1 },
    });
    expect((await bfl(emulator.url, '/_emulator/limits')).json).toEqual(put.json);
    await submit(emulator, 'flux-dev', { prompt: 'b' });
    expect((await post(emulator, 'flux-dev', { prompt: 'c' })).status).toBe(429);
    await submit(emulator, 'flux-pro-1.1', { prompt: 'c' });
    const bad = await bfl(emulator.url, '/_emulator/limits', {
      method: 'PUT',
      body: { active_tasks: 0, burst: 1 },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toContain('burst: unknown key');
    expect(emulator.limits().active_tasks).toBe(3);
    expect(emulator.setLimits({ retry_after_seconds: 2 }).retry_after_seconds).toBe(2);
    expect(() => emulator.setLimits({ active_tasks: -1 })).toThrow(/invalid BFL emulator limits/);
  });
});

describe('credits', () => {
  it('answers 402 when the balance is below the cost, and reports the balance at /v1/credits', async () => {
    const { emulator } = await setup({ accounts: [{ id: 'poor', credits: 10, keys: [{ key: 'k' }] }] });
    const balance = async () => (await bfl(emulator.url, '/v1/credits', { key: 'k' })).json;
    expect(await balance()).toEqual({ credits: 10 });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'a' }, 'k');
    await submit(emulator, 'flux-pro-1.1', { prompt: 'b' }, 'k');
    expect(await balance()).toEqual({ credits: 2 });
    const refused = await post(emulator, 'flux-pro-1.1', { prompt: 'c' }, 'k');
    expect(refused.status).toBe(402);
    expect(typeof refused.json.detail).toBe('string');
    expect((await post(emulator, 'flux-dev', { prompt: 'c' }, 'k')).status).toBe(402);
    await submit(emulator, 'flux-2-klein-4b', { prompt: 'cheaper' }, 'k');
    expect(await balance()).toEqual({ credits: 0.6 });
    expect((await bfl(emulator.url, '/v1/credits')).status).toBe(403);
  });

  it('gives back the cost of moderated tasks, and of failed ones unless billing.charge_errors', async () => {
    const words = { request_moderation_words: ['blocked'], content_moderation_words: ['flagged'] };
    const { clock, emulator } = await setup({ generation: words });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'fine' });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'blocked words' });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'flagged image' });
    expect(emulator.stats().credits).toEqual({ taken: 12, refunded: 0, charged: 12 });
    clock.advance(2_000);
    expect(emulator.stats().credits).toEqual({ taken: 12, refunded: 4, charged: 8 });
    clock.advance(10_000);
    expect(emulator.stats().credits).toEqual({ taken: 12, refunded: 8, charged: 4 });
    expect((await bfl(emulator.url, '/v1/credits', { key: DEMO_BFL_KEY })).json).toEqual({
      credits: 100_000 - 4,
    });

    const failing = await setup({ generation: { failure_rate: 1 } });
    await submit(failing.emulator, 'flux-pro-1.1', { prompt: 'x' });
    failing.clock.advance(12_000);
    expect(failing.emulator.stats().credits).toEqual({ taken: 4, refunded: 4, charged: 0 });
    const charging = await setup({ generation: { failure_rate: 1 }, billing: { charge_errors: true } });
    await submit(charging.emulator, 'flux-pro-1.1', { prompt: 'x' });
    charging.clock.advance(12_000);
    expect(charging.emulator.stats().credits).toEqual({ taken: 4, refunded: 0, charged: 4 });
  });
});
