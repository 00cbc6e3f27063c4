// fal webhooks from the emulator against real receivers: the body (as Python writes JSON), the
// four X-Fal-Webhook-* headers and an Ed25519 signature verified independently with node:crypto
// against the JWKS the emulator serves; ERROR webhooks; retries on the scaled schedule with fresh
// timestamps; the payload_error knob; rotated keys; lost and duplicate deliveries.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './support/emulator.js';
import { waitUntil } from './support/wait.js';
import { fal, startFal, startReceiver, submit, verifyFalWebhook } from './emulator-fal-harness.js';

const QUICK = {
  generation: { queue_seconds: [0, 0] as [number, number] },
  models: { 'fal-ai/flux/dev': { seconds: [5, 5] as [number, number] } },
};
const hook = (url: string) => `fal_webhook=${encodeURIComponent(url)}`;

describe('webhook body and signature', () => {
  it('posts the result, signed over request_id, user_id, timestamp and the body digest', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1));
    const emulator = await startFal(QUICK, clock);
    const receiver = await startReceiver();
    const queued = await submit(emulator, { prompt: 'café chair', seed: 7 }, { query: hook(receiver.url) });
    expect(queued.gateway_request_id).toBe(queued.request_id);
    clock.advance(5_000);
    await waitUntil('the webhook', () => receiver.received.length === 1, 10_000, 5);
    const [webhook] = receiver.received;
    const result = await fal(emulator.url, queued.response_url);
    expect(webhook!.json).toEqual({
      request_id: queued.request_id,
      gateway_request_id: queued.request_id,
      status: 'OK',
      payload: result.json,
      error: null,
      payload_error: null,
    });
    // Python's json.dumps(sort_keys=True): ", " and ": ", sorted keys, non-ASCII escaped.
    expect(
      webhook!.raw.startsWith(
        `{"error": null, "gateway_request_id": "${queued.request_id}", "payload": {"has_nsfw_concepts": [false], "images": [`,
      ),
    ).toBe(true);
    expect(webhook!.raw).toContain('"prompt": "caf\\u00e9 chair"');
    expect(webhook!.headers).toMatchObject({
      'x-fal-webhook-request-id': queued.request_id,
      'x-fal-webhook-user-id': 'user_demo',
      'x-fal-webhook-timestamp': String(Date.UTC(2026, 5, 1, 0, 0, 5) / 1000),
    });
    expect(webhook!.headers['x-fal-webhook-signature']).toMatch(/^[0-9a-f]{128}$/);
    const jwks = (await fal(emulator.url, '/.well-known/jwks.json', { key: null })).json;
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({
      kty: 'OKP',
      crv: 'Ed25519',
      x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      kid: expect.any(String),
    });
    expect(emulator.jwksUrl).toBe(`${emulator.url}/.well-known/jwks.json`);
    expect(verifyFalWebhook(jwks, webhook!)).toBe(true);
    expect(verifyFalWebhook(jwks, { ...webhook!, raw: JSON.stringify(webhook!.json) })).toBe(false);
    expect(
      verifyFalWebhook(jwks, {
        ...webhook!,
        headers: { ...webhook!.headers, 'x-fal-webhook-timestamp': '1' },
      }),
    ).toBe(false);
    // The payload the client got counts as the result fetched.
    await waitUntil('the delivery counted', () => emulator.stats().webhooks.delivered === 1, 10_000, 5);
    expect(emulator.stats().retention.results_fetched).toBe(1);
  });

  it('sends ERROR with the model error as payload for a request that failed', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(
      { ...QUICK, generation: { queue_seconds: [0, 0], validation_seconds: 1 } },
      clock,
    );
    const receiver = await startReceiver();
    const queued = await submit(emulator, { prompt: 42 }, { query: hook(receiver.url) });
    clock.advance(1_000);
    await waitUntil('the webhook', () => receiver.received.length === 1, 10_000, 5);
    expect(receiver.received[0]!.json).toMatchObject({
      request_id: queued.request_id,
      status: 'ERROR',
      error: 'Invalid status code: 422',
      payload: { detail: [{ loc: ['body', 'prompt'], type: 'string_type' }] },
      payload_error: null,
    });
  });

  it('sends a null payload and a payload_error under the knob, and the result is still there to fetch', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...QUICK, webhooks: { payload_error_rate: 1 } }, clock);
    const receiver = await startReceiver();
    const queued = await submit(emulator, { prompt: 'big' }, { query: hook(receiver.url) });
    clock.advance(5_000);
    await waitUntil('the webhook', () => receiver.received.length === 1, 10_000, 5);
    expect(receiver.received[0]!.json).toMatchObject({
      status: 'OK',
      payload: null,
      payload_error: expect.any(String),
    });
    expect(emulator.stats().retention.results_fetched).toBe(0);
    expect((await fal(emulator.url, queued.response_url)).status).toBe(200);
    expect(emulator.stats().retention.results_fetched).toBe(1);
    expect(emulator.stats().faults.webhook_payload_error).toBe(1);
  });
});

describe('webhook delivery', () => {
  it('retries a failing receiver on the scaled schedule, each attempt with a fresh timestamp and signature', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1));
    const emulator = await startFal(
      { ...QUICK, time_scale: 2, webhooks: { retry_delays_seconds: [10, 20] } },
      clock,
    );
    const receiver = await startReceiver((n) => (n < 2 ? 503 : 200));
    await submit(emulator, { prompt: 'x' }, { query: hook(receiver.url) });
    clock.advance(10_000);
    await waitUntil('attempt 1', () => emulator.stats().webhooks.retryable_failure === 1, 10_000, 5);
    clock.advance(19_999);
    expect(receiver.received).toHaveLength(1);
    clock.advance(1);
    await waitUntil('attempt 2', () => emulator.stats().webhooks.retryable_failure === 2, 10_000, 5);
    clock.advance(40_000);
    await waitUntil('attempt 3', () => emulator.stats().webhooks.delivered === 1, 10_000, 5);
    const stamps = receiver.received.map(
      (w) => Number(w.headers['x-fal-webhook-timestamp']) * 1000 - Date.UTC(2026, 5, 1),
    );
    expect(stamps).toEqual([10_000, 30_000, 70_000]);
    const jwks = (await fal(emulator.url, '/.well-known/jwks.json')).json;
    expect(receiver.received.every((w) => verifyFalWebhook(jwks, w))).toBe(true);
    expect(new Set(receiver.received.map((w) => w.raw)).size).toBe(1);
  });

  it('loses or duplicates deliveries by rate', async () => {
    const clock = new ManualClock();
    const lossy = await startFal({ ...QUICK, faults: { webhook_lost_rate: 1 } }, clock);
    const doubled = await startFal({ ...QUICK, faults: { webhook_duplicate_rate: 1 } }, clock);
    const receiver = await startReceiver();
    await submit(lossy, { prompt: 'lost' }, { query: hook(receiver.url) });
    await submit(doubled, { prompt: 'twice' }, { query: hook(receiver.url) });
    clock.advance(5_000);
    await waitUntil('both deliveries', () => receiver.received.length === 2, 10_000, 5);
    expect(receiver.received.map((w) => w.json.payload.prompt)).toEqual(['twice', 'twice']);
    expect(receiver.received[0]!.raw).toBe(receiver.received[1]!.raw);
    expect(lossy.stats().webhooks.lost).toBe(1);
    // The receiver sees the second POST before the emulator has read its answer.
    await waitUntil(
      'the duplicate counted',
      () => doubled.stats().webhooks.duplicate_delivered === 1,
      10_000,
      5,
    );
  });
});

describe('signing keys', () => {
  it('lists two keys when rotated and signs with the second, so a client must try every key', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...QUICK, webhooks: { rotated: true } }, clock);
    const receiver = await startReceiver();
    await submit(emulator, { prompt: 'x' }, { query: hook(receiver.url) });
    clock.advance(5_000);
    await waitUntil('the webhook', () => receiver.received.length === 1, 10_000, 5);
    const jwks = (await fal(emulator.url, '/.well-known/jwks.json')).json;
    expect(jwks.keys).toHaveLength(2);
    expect(new Set(jwks.keys.map((k: { kid: string }) => k.kid)).size).toBe(2);
    expect(verifyFalWebhook({ keys: [jwks.keys[0]] }, receiver.received[0]!)).toBe(false);
    expect(verifyFalWebhook(jwks, receiver.received[0]!)).toBe(true);
  });

  it('derives the same keys from the same seed, takes them from the config, and rotates on request', async () => {
    const a = await startFal({ seed: 5 });
    const b = await startFal({ seed: 5 });
    const c = await startFal({ seed: 6 });
    const given = await startFal({ webhooks: { signing_keys: [Buffer.alloc(32, 9).toString('base64url')] } });
    const keys = async (e: { url: string }) => (await fal(e.url, '/.well-known/jwks.json')).json.keys;
    expect(await keys(a)).toEqual(await keys(b));
    expect(await keys(a)).not.toEqual(await keys(c));
    // The JWKS `x` of a configured seed is its Ed25519 public key, computed here with node:crypto.
    const seed = Buffer.alloc(32, 9);
    const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
    const x = createPublicKey(createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })).export({
      format: 'jwk',
    }).x;
    expect((await keys(given)).map((k: { x: string }) => k.x)).toEqual([x]);
    const rotated = await fal(a.url, '/_emulator/webhook-keys', { method: 'POST', key: null });
    expect(rotated.json.keys).toHaveLength(2);
    expect(await keys(a)).toHaveLength(2);
    expect(a.stats().webhook_keys).toBe(2);
  });
});
