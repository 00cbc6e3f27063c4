// Webhooks of the BFL emulator: sent when a task ends (Ready, Error, moderated; never for a stuck
// task), the payload (get_result's object plus timestamp, or the smaller notice), the signature
// (X-BFL-Signature: sha256=<HMAC-SHA256 of the body>, verified here with node:crypto; the secret
// echoed; none), the retry schedule, and the duplicate and lost faults.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BflConfigOverrides } from '../emulator/bfl/index.js';
import {
  bfl,
  DEMO_BFL_KEY,
  fixed,
  ManualClock,
  startTestBfl,
  startWebhookReceiver,
} from './support/emulator-bfl.js';

async function setup(config: BflConfigOverrides = {}, statuses: number[] = []) {
  const clock = new ManualClock();
  const emulator = await startTestBfl(fixed(config), { clock });
  const receiver = await startWebhookReceiver(statuses, clock);
  const submitHooked = async (body: object, model = 'flux-pro-1.1'): Promise<string> => {
    const answer = await bfl(emulator.url, `/v1/${model}`, {
      key: DEMO_BFL_KEY,
      body: { webhook_url: receiver.base, ...body },
    });
    expect(answer.status, answer.text).toBe(200);
    return answer.json.id as string;
  };
  return { clock, emulator, receiver, submitHooked };
}

/** Verifies `sha256=<hex>` against the raw body, as a receiver should: constant time. */
function verify(body: string, header: unknown, secret: string): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(body).digest('hex'));
  const given = Buffer.from(header.slice('sha256='.length));
  return expected.length === given.length && timingSafeEqual(expected, given);
}

describe('the webhook of a task', () => {
  it("posts get_result's object plus a timestamp when the task is Ready, signed with HMAC-SHA256", async () => {
    const { clock, emulator, receiver, submitHooked } = await setup();
    const t0 = clock.now();
    const id = await submitHooked({ prompt: 'a signed fox', webhook_secret: 'whsec-test', seed: 5 });
    clock.advance(11_999);
    expect(receiver.received).toHaveLength(0);
    clock.advance(1);
    const [hook] = await receiver.until(1);
    expect(hook!.url).toBe('/hooks/pixelmill');
    expect(hook!.at).toBe(t0 + 12_000);
    expect(hook!.headers['content-type']).toBe('application/json');
    expect(verify(hook!.body, hook!.headers['x-bfl-signature'], 'whsec-test')).toBe(true);
    expect(verify(hook!.body, hook!.headers['x-bfl-signature'], 'another-secret')).toBe(false);
    // A forged body does not verify against the signature sent with the real one.
    expect(
      verify(
        hook!.body.replace('a signed fox', 'a forged fox'),
        hook!.headers['x-bfl-signature'],
        'whsec-test',
      ),
    ).toBe(false);
    const payload = JSON.parse(hook!.body);
    expect(payload).toEqual({
      id,
      status: 'Ready',
      result: {
        sample: expect.stringContaining(`/results/${id}/sample.jpeg?se=`),
        prompt: 'a signed fox',
        seed: 5,
        start_time: (t0 + 2_000) / 1000,
        end_time: (t0 + 12_000) / 1000,
        duration: 10,
      },
      progress: null,
      details: null,
      preview: null,
      timestamp: new Date(t0 + 12_000).toISOString(),
    });
    expect(hook!.body).not.toContain('whsec-test');
    const image = await bfl('', payload.result.sample);
    expect(image.status).toBe(200);
    expect(emulator.stats().webhooks).toMatchObject({ delivered: 1 });
  });

  it('sends no signature header for a request without webhook_secret', async () => {
    const { clock, receiver, submitHooked } = await setup();
    await submitHooked({ prompt: 'unsigned' });
    clock.advance(12_000);
    const [hook] = await receiver.until(1);
    expect(hook!.headers['x-bfl-signature']).toBeUndefined();
    expect(hook!.headers['x-webhook-secret']).toBeUndefined();
  });

  it('posts the failure and moderation statuses, and nothing for a stuck task', async () => {
    const { clock, receiver, submitHooked } = await setup({
      generation: { request_moderation_words: ['blocked'], content_moderation_words: ['flagged'] },
    });
    await submitHooked({ prompt: 'blocked prompt' });
    await submitHooked({ prompt: 'flagged image' });
    clock.advance(12_000);
    const hooks = await receiver.until(2);
    expect(hooks.map((hook) => JSON.parse(hook.body).status)).toEqual([
      'Request Moderated',
      'Content Moderated',
    ]);
    const failing = await setup({ generation: { failure_rate: 1 } });
    await failing.submitHooked({ prompt: 'x' });
    failing.clock.advance(12_000);
    expect(JSON.parse((await failing.receiver.until(1))[0]!.body)).toMatchObject({
      status: 'Error',
      details: { error: 'Generation failed' },
    });
    const stuck = await setup({ faults: { stuck_task_rate: 1 } });
    await stuck.submitHooked({ prompt: 'stuck' });
    stuck.clock.advance(24 * 3_600_000);
    expect(stuck.clock.pendingTimes()).toEqual([]);
    expect(stuck.receiver.received).toHaveLength(0);
  });

  it('sends the smaller notice with webhooks.payload: notice, and echoes the secret with signature: secret_header', async () => {
    const { clock, receiver, submitHooked } = await setup({
      webhooks: { payload: 'notice', signature: 'secret_header' },
    });
    const id = await submitHooked({ prompt: 'noticed', webhook_secret: 'plain-secret' });
    clock.advance(12_000);
    const [hook] = await receiver.until(1);
    expect(hook!.headers['x-webhook-secret']).toBe('plain-secret');
    expect(hook!.headers['x-bfl-signature']).toBeUndefined();
    expect(JSON.parse(hook!.body)).toEqual({
      task_id: id,
      status: 'SUCCESS',
      result: expect.objectContaining({ sample: expect.any(String), seed: expect.any(Number) }),
      timestamp: expect.any(String),
    });
    const none = await setup({
      webhooks: { signature: 'none', payload: 'notice' },
      generation: { failure_rate: 1 },
    });
    await none.submitHooked({ prompt: 'x', webhook_secret: 'unused' });
    none.clock.advance(12_000);
    const [failed] = await none.receiver.until(1);
    expect(failed!.headers['x-bfl-signature']).toBeUndefined();
    expect(JSON.parse(failed!.body)).toMatchObject({ status: 'FAILED', error: 'Error' });
  });
});

describe('delivery', () => {
  it('retries a failed delivery after 1, 5 and 30 seconds (scaled), then gives up', async () => {
    // A per-attempt timeout far from the retry gaps, so that its timer is not taken for a retry's.
    const { clock, emulator, receiver, submitHooked } = await setup(
      { webhooks: { timeout_seconds: 100 } },
      [500, 503, 404, 500],
    );
    await submitHooked({ prompt: 'retried' });
    const end = clock.now() + 12_000;
    clock.advance(12_000);
    await receiver.until(1);
    for (const gap of [1_000, 5_000, 30_000]) {
      // The retry is armed once the failed answer has been read: wait for that timer, then fire it.
      await waitFor(() => clock.pendingTimes().includes(clock.now() + gap));
      clock.advance(gap);
      await receiver.until(receiver.received.length + 1);
    }
    expect(receiver.received.map((hook) => hook.at - end)).toEqual([0, 1_000, 6_000, 36_000]);
    await waitFor(() => emulator.stats().webhooks.gave_up === 1);
    expect(emulator.stats().webhooks).toMatchObject({ retryable_failure: 4, gave_up: 1, delivered: 0 });
  });

  it('sends a delivered webhook twice with webhook_duplicate_rate 1, and none with webhook_lost_rate 1', async () => {
    const duplicated = await setup({ faults: { webhook_duplicate_rate: 1 } });
    await duplicated.submitHooked({ prompt: 'twice', webhook_secret: 's' });
    duplicated.clock.advance(12_000);
    const [first, second] = await duplicated.receiver.until(2);
    expect(second!.body).toBe(first!.body);
    expect(verify(second!.body, second!.headers['x-bfl-signature'], 's')).toBe(true);
    await waitFor(() => duplicated.emulator.stats().webhooks.duplicate_delivered === 1);

    const lost = await setup({ faults: { webhook_lost_rate: 1 } });
    await lost.submitHooked({ prompt: 'never' });
    lost.clock.advance(12_000);
    expect(lost.emulator.stats().webhooks).toMatchObject({ lost: 1, delivered: 0 });
    expect(lost.receiver.received).toHaveLength(0);
  });
});

/** Waits on turns of the event loop (not on time) until `condition` holds; fails if it never does. */
async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !condition(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(condition()).toBe(true);
}
