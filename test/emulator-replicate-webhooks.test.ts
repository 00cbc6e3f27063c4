// Webhooks of the Replicate emulator against real receivers on 127.0.0.1, on a manual clock: the
// events of webhook_events_filter and their bodies, Standard Webhooks signatures (checked with
// node:crypto against the secret GET /v1/webhooks/default/secret gives), retries of the completed
// webhook only (on any failure, scaled by time_scale, same webhook-id, fresh timestamp), redirects
// not followed, and the duplicate and lost faults.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { DEMO_WEBHOOK_SECRET } from '../emulator/replicate/index.js';
import {
  api,
  create,
  getPrediction,
  ManualClock,
  signatureValid,
  startReplicate,
  startWebhookReceiver,
  T0,
  type Json,
} from './emulator-replicate-helpers.js';

const timing = { generation: { queue_seconds: 2, run_seconds: 3 } };

/** Lets pending HTTP work (a webhook in flight) progress without moving the clock. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('webhooks', () => {
  it('sends output and completed by default, each the prediction then, signed with the default secret', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(timing, { clock });
    const receiver = await startWebhookReceiver([], clock);
    const secret = (await api(emulator, '/v1/webhooks/default/secret')).json;
    expect(secret).toEqual({ key: DEMO_WEBHOOK_SECRET });

    const created = await create(emulator, { input: { prompt: 'p' }, webhook: `${receiver.base}?item=7` });
    clock.advance(5_000);
    const [output, completed] = await receiver.until(2);
    expect(output!.url).toBe('/hooks/pixelmill?item=7');
    const outputBody = JSON.parse(output!.body);
    expect(outputBody).toMatchObject({ id: created.id, status: 'processing', completed_at: null });
    expect(outputBody.output).toHaveLength(1);
    const done = await getPrediction(emulator, created.id);
    expect(JSON.parse(completed!.body)).toEqual(done);
    for (const hook of [output!, completed!]) {
      expect(hook.headers['content-type']).toBe('application/json');
      expect(hook.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9]{27}$/);
      expect(hook.headers['webhook-timestamp']).toBe(String(Math.floor((T0 + 5_000) / 1000)));
      expect(signatureValid(hook.headers, hook.body, secret.key)).toBe(true);
      // A forged body, or another secret, does not verify.
      expect(signatureValid(hook.headers, hook.body.replace('"p"', '"q"'), secret.key)).toBe(false);
      expect(signatureValid(hook.headers, hook.body, 'whsec_b3RoZXI=')).toBe(false);
    }
    expect(output!.headers['webhook-id']).not.toBe(completed!.headers['webhook-id']);
    clock.advance(600_000);
    await settle();
    expect(receiver.received).toHaveLength(2);
    expect(emulator.stats().webhooks.delivered).toBe(2);
  });

  it('sends start at create, logs when it starts running, and only the events asked for', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(timing, { clock });
    const receiver = await startWebhookReceiver([], clock);
    await create(emulator, {
      input: { prompt: 'p' },
      webhook: receiver.base,
      webhook_events_filter: ['start', 'logs', 'completed'],
    });
    const [start] = await receiver.until(1);
    expect(JSON.parse(start!.body)).toMatchObject({ status: 'starting', started_at: null });
    clock.advance(2_000);
    const [, logs] = await receiver.until(2);
    expect(JSON.parse(logs!.body)).toMatchObject({
      status: 'processing',
      logs: expect.stringMatching(/^Using seed/),
    });
    clock.advance(3_000);
    const [, , completed] = await receiver.until(3);
    expect(JSON.parse(completed!.body).status).toBe('succeeded');
    await settle();
    expect(receiver.received).toHaveLength(3);
  });

  it('sends the completed webhook of a canceled prediction when it is canceled', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(timing, { clock });
    const receiver = await startWebhookReceiver([], clock);
    const created = await create(emulator, {
      input: { prompt: 'p' },
      webhook: receiver.base,
      webhook_events_filter: ['completed'],
    });
    clock.advance(1_000);
    await api(emulator, `/v1/predictions/${created.id}/cancel`, { method: 'POST' });
    // The webhook is due now; a manual clock runs what is due when told to.
    clock.advance(0);
    const [completed] = await receiver.until(1);
    expect(JSON.parse(completed!.body)).toMatchObject({
      status: 'canceled',
      completed_at: '2026-01-01T00:00:01.000Z',
    });
    clock.advance(10_000);
    await settle();
    expect(receiver.received).toHaveLength(1);
  });

  it('retries the completed webhook on any failure, exponentially and scaled, keeping its webhook-id', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ ...timing, time_scale: 0.5 }, { clock });
    const receiver = await startWebhookReceiver([500, 404, 429, 500, 503], clock);
    await create(emulator, {
      input: { prompt: 'p' },
      webhook: receiver.base,
      webhook_events_filter: ['completed'],
    });
    clock.advance(2_500);
    await receiver.until(1);
    // Retries 4, 8, 16 and 32 s later, halved by time_scale; each armed once the failure is known.
    const failures = (n: number) =>
      vi.waitFor(() => expect(emulator.stats().webhooks.retryable_failure).toBe(n), { interval: 5 });
    const gaps = [2_000, 4_000, 8_000, 16_000];
    for (const [i, gap] of gaps.entries()) {
      await failures(i + 1);
      clock.advance(gap - 1);
      await settle();
      expect(receiver.received).toHaveLength(i + 1);
      clock.advance(1);
      await receiver.until(i + 2);
    }
    const at = receiver.received.map((r) => r.at - T0);
    expect(at).toEqual([2_500, 4_500, 8_500, 16_500, 32_500]);
    await failures(5);
    const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-timestamp'])).size).toBe(5);
    for (const hook of receiver.received)
      expect(signatureValid(hook.headers, hook.body, DEMO_WEBHOOK_SECRET)).toBe(true);
    clock.advance(3_600_000);
    await settle();
    expect(receiver.received).toHaveLength(5);
    expect(emulator.stats().webhooks).toMatchObject({ retryable_failure: 5, gave_up: 1, delivered: 0 });
  });

  it('never retries an intermediate webhook', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(timing, { clock });
    const receiver = await startWebhookReceiver([500, 200], clock);
    await create(emulator, {
      input: { prompt: 'p' },
      webhook: receiver.base,
      webhook_events_filter: ['start', 'completed'],
    });
    await receiver.until(1);
    clock.advance(4_000);
    await settle();
    expect(receiver.received).toHaveLength(1);
    clock.advance(1_000);
    const [, completed] = await receiver.until(2);
    expect(JSON.parse(completed!.body).status).toBe('succeeded');
  });

  it('does not follow a redirect: the answer counts as a failure and the target never hears of it', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(timing, { clock });
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(req.url ?? '');
      req.resume();
      res.writeHead(req.url === '/hook' ? 307 : 200, { location: '/elsewhere' }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(
      () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
    );
    const port = (server.address() as AddressInfo).port;
    await create(emulator, {
      input: { prompt: 'p' },
      webhook: `http://127.0.0.1:${port}/hook`,
      webhook_events_filter: ['completed'],
    });
    clock.advance(5_000);
    await vi.waitFor(() => expect(emulator.stats().webhooks.retryable_failure).toBe(1), { interval: 5 });
    expect(paths).toEqual(['/hook']);
    clock.advance(4_000);
    await vi.waitFor(() => expect(paths).toEqual(['/hook', '/hook']), { interval: 5 });
  });

  it('sends a delivered webhook twice with the duplicate fault, and none with the lost fault', async () => {
    const clock = new ManualClock(T0);
    const twice = await startReplicate({ ...timing, faults: { webhook_duplicate_rate: 1 } }, { clock });
    const receiver = await startWebhookReceiver([], clock);
    await create(twice, {
      input: { prompt: 'p' },
      webhook: receiver.base,
      webhook_events_filter: ['completed'],
    });
    clock.advance(5_000);
    const [first, second] = await receiver.until(2);
    expect(second!.body).toBe(first!.body);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    await vi.waitFor(
      () => expect(twice.stats().webhooks).toMatchObject({ delivered: 1, duplicate_delivered: 1 }),
      {
        interval: 5,
      },
    );

    const lost = await startReplicate({ ...timing, faults: { webhook_lost_rate: 1 } }, { clock });
    const silent = await startWebhookReceiver([], clock);
    await create(lost, { input: { prompt: 'p' }, webhook: silent.base });
    clock.advance(60_000);
    await settle();
    expect(silent.received).toHaveLength(0);
    expect(lost.stats().webhooks.lost).toBe(2);
  });

  it('refuses a webhook that is not an http(s) URI, and an http one when https is required', async () => {
    const strict = await startReplicate({ webhooks: { require_https: true } });
    for (const webhook of ['http://127.0.0.1/hook', 'https://exämple.com/', 'not a url', 42]) {
      const response = await api(strict, '/v1/models/black-forest-labs/flux-schnell/predictions', {
        method: 'POST',
        body: { input: { prompt: 'p' }, webhook },
      });
      expect(response.status, String(webhook)).toBe(422);
      expect((response.json.invalid_fields as Json[])[0].field).toBe('webhook');
    }
    expect(
      (
        await api(strict, '/v1/models/black-forest-labs/flux-schnell/predictions', {
          method: 'POST',
          body: { input: { prompt: 'p' }, webhook: 'https://example.com/hook' },
        })
      ).status,
    ).toBe(201);
  });
});
