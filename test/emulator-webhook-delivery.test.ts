// The terminal-state webhook as the emulator sends it: to {webhook}/callback at the terminal
// moment, the Task object as body in the submit language, signed with the account's secret
// (no header when the secret is empty), retried on 5xx, counted in stats.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  call,
  ManualClock,
  startTestEmulator,
  startWebhookReceiver as startReceiver,
  submitTask,
} from './support/emulator.js';

const accounts = [
  { id: 'acct_signed', webhook_secret: 'whsec_signed', keys: [{ key: 'sk-signed' }] },
  { id: 'acct_plain', webhook_secret: '', keys: [{ key: 'sk-plain' }] },
];
const quick = {
  time_scale: 0.001,
  accounts,
  generation: { queue_seconds: [1, 1] as [number, number], seconds: { '1K': [5, 5] as [number, number] } },
};

describe('webhooks from the emulator', () => {
  it('posts the completed Task to {webhook}/callback, signed with the account secret', async () => {
    const receiver = await startReceiver();
    const emulator = await startTestEmulator(quick);
    const id = await submitTask(emulator, 'sk-signed', { prompt: 'hooked', webhook: receiver.base });
    const [delivery] = await receiver.until(1);
    expect(delivery!.url).toBe('/hooks/pixelmill/callback');
    expect(delivery!.headers['content-type']).toMatch(/^application\/json/);
    expect(delivery!.headers['x-webhook-signature']).toBe(
      createHmac('sha256', 'whsec_signed').update(delivery!.body).digest('hex'),
    );
    const task = JSON.parse(delivery!.body);
    expect(task).toMatchObject({ id, status: 'completed', progress: '100%', credits_cost: 1 });
    expect(task.code).toBeUndefined();
    // The body is exactly what GET returns as data.
    const got = await call(emulator.url, `/v1/tasks/${id}`, { key: 'sk-signed' });
    expect(got.json.data).toEqual(task);
    await expect.poll(() => emulator.stats().webhooks.delivered).toBe(1);
  });

  it('omits the signature for an empty secret and writes a failure in the submit language', async () => {
    const receiver = await startReceiver();
    const emulator = await startTestEmulator(quick);
    await call(emulator.url, '/v1/images/generations', {
      key: 'sk-plain',
      body: { prompt: 'forbidden thing', webhook: receiver.base, language: 'ja' },
    });
    const [delivery] = await receiver.until(1);
    expect(delivery!.headers['x-webhook-signature']).toBeUndefined();
    const task = JSON.parse(delivery!.body);
    expect(task).toMatchObject({
      status: 'failed',
      credits_cost: 0,
      error: { code: 'content_blocked', param: 'prompt' },
    });
    expect(task.error.message).toBe(
      'プロンプトはコンテンツポリシーにより拒否されました。クレジットは請求されていません。',
    );
  });

  it('retries a 503 and a 429, not a 400; sends nothing for tasks without webhook', async () => {
    const retried = await startReceiver([503, 429]);
    const refused = await startReceiver([400]);
    const emulator = await startTestEmulator(quick);
    const submit = (body: object) =>
      call(emulator.url, '/v1/images/generations', { key: 'sk-signed', body: { prompt: 'p', ...body } });
    await submit({ webhook: retried.base });
    await submit({ webhook: refused.base });
    await submit({});
    const attempts = await retried.until(3);
    expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
    await expect
      .poll(() => emulator.stats().webhooks)
      .toEqual({ delivered: 1, retryable_failure: 2, rejected: 1, gave_up: 0 });
    expect(refused.received).toHaveLength(1);
  });

  it('retries 10, 30 and 60 s x time_scale apart on the emulator clock, then gives up', async () => {
    const clock = new ManualClock();
    const receiver = await startReceiver([500, 503, 429, 500], clock);
    const emulator = await startTestEmulator(quick, { clock });
    await submitTask(emulator, 'sk-signed', { prompt: 'p', webhook: receiver.base });
    const terminal = clock.now() + 6; // (1 s queue + 5 s generation) x 0.001
    clock.advance(6);
    for (const [attempt, gap] of [10, 30, 60].entries()) {
      await receiver.until(attempt + 1);
      await expect.poll(() => emulator.stats().webhooks.retryable_failure).toBe(attempt + 1);
      // The only timer left is the next retry, due exactly `gap` ms after the failure.
      expect(clock.pendingTimes()).toEqual([clock.now() + gap]);
      clock.advance(gap);
    }
    await receiver.until(4);
    await expect
      .poll(() => emulator.stats().webhooks)
      .toEqual({ delivered: 0, retryable_failure: 4, rejected: 0, gave_up: 1 });
    expect(clock.pendingTimes()).toEqual([]);
    expect(receiver.received.map((r) => r.at - terminal)).toEqual([0, 10, 40, 100]);
    const signature = createHmac('sha256', 'whsec_signed').update(receiver.received[0]!.body).digest('hex');
    for (const attempt of receiver.received) {
      expect(attempt.body).toBe(receiver.received[0]!.body);
      expect(attempt.headers['x-webhook-signature']).toBe(signature);
    }
  });

  it('abandons an attempt after 10 s x time_scale without an answer, and retries it', async () => {
    const clock = new ManualClock();
    const receiver = await startReceiver([0, 200], clock);
    // 0.5: the attempt timeout is 5 s of emulator time, far above the sender's 1 s floor.
    const emulator = await startTestEmulator({ ...quick, time_scale: 0.5 }, { clock });
    await submitTask(emulator, 'sk-signed', { prompt: 'p', webhook: receiver.base });
    clock.advance(3_000);
    const terminal = clock.now();
    await receiver.until(1);
    expect(clock.pendingTimes()).toEqual([terminal + 5_000]);
    clock.advance(4_999);
    expect(emulator.stats().webhooks.retryable_failure).toBe(0);
    clock.advance(1);
    await expect.poll(() => emulator.stats().webhooks.retryable_failure).toBe(1);
    expect(clock.pendingTimes()).toEqual([terminal + 10_000]);
    clock.advance(5_000);
    await receiver.until(2);
    await expect.poll(() => emulator.stats().webhooks.delivered).toBe(1);
    expect(receiver.received.map((r) => r.at - terminal)).toEqual([0, 10_000]);
  });
});
