// Request limits of the Replicate emulator over real HTTP, on a manual clock: 600 creates a minute
// and 3,000 other requests a minute per token, bursts up to the bucket, the stronger create limit
// while credit is low, the 429 body in both wordings, Retry-After sent or not (both readings of an
// unconfirmed fact), ratelimit headers, and the limits changed on a running emulator.
import { describe, expect, it } from 'vitest';
import type { RunningReplicateEmulator } from '../emulator/replicate/index.js';
import { api, ManualClock, SCHNELL, startReplicate, T0, TOKEN } from './emulator-replicate-helpers.js';

const body = { input: { prompt: 'p' } };
const createOnce = (emulator: RunningReplicateEmulator, token = TOKEN) =>
  api(emulator, SCHNELL, { method: 'POST', body, token });

describe('limits', () => {
  it('takes 600 creates at once, then one every 100 ms, per token, apart from the other endpoints', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(
      {
        accounts: [
          {
            username: 'demo',
            tokens: [TOKEN, 'r8_second'],
            webhook_secret: 'whsec_ZGVtbw==',
            credit_usd: 1000,
          },
        ],
      },
      { clock },
    );
    const first = await createOnce(emulator);
    expect([first.headers['ratelimit-remaining'], first.headers['ratelimit-reset']]).toEqual(['599', '1']);
    for (let i = 1; i < 600; i++) expect((await createOnce(emulator)).status).toBe(201);
    const refused = await createOnce(emulator);
    expect([refused.status, refused.headers['retry-after'], refused.json]).toEqual([
      429,
      '1',
      { detail: 'Request was throttled. Your rate limit resets in ~1s.' },
    ]);
    expect(refused.headers['ratelimit-remaining']).toBeUndefined();
    // The other endpoints, and another token, have their own buckets.
    expect((await api(emulator, '/v1/predictions')).status).toBe(200);
    expect((await createOnce(emulator, 'r8_second')).status).toBe(201);
    clock.advance(99);
    expect((await createOnce(emulator)).status).toBe(429);
    clock.advance(1);
    expect((await createOnce(emulator)).status).toBe(201);
    expect(emulator.stats().predictions_total).toBe(602);
    expect(emulator.stats().requests['POST /v1/models/{owner}/{name}/predictions']).toEqual({
      '201': 602,
      '429': 2,
    });
  });

  it('limits the other endpoints together at their own rate', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(
      { limits: { other: { requests: 3000, window_seconds: 60, burst: 5 } } },
      { clock },
    );
    for (const path of [
      '/v1/predictions',
      '/v1/predictions/x',
      '/v1/webhooks/default/secret',
      '/v1/predictions',
      '/v1/predictions',
    ])
      expect((await api(emulator, path)).status).not.toBe(429);
    const refused = await api(emulator, '/v1/predictions/x/cancel', { method: 'POST' });
    expect([refused.status, refused.headers['retry-after']]).toEqual([429, '1']);
    clock.advance(20);
    expect((await api(emulator, '/v1/predictions')).status).toBe(200);
    expect((await createOnce(emulator)).status).toBe(201);
  });

  it('sends no Retry-After when told not to, retry_after in the body when told to, and the older wording', async () => {
    const clock = new ManualClock(T0);
    const quiet = await startReplicate(
      {
        limits: {
          create: { requests: 1, window_seconds: 30, burst: 1 },
          retry_after_header: false,
          retry_after_in_body: true,
          throttle_message: 'expected_available',
        },
      },
      { clock },
    );
    await createOnce(quiet);
    const refused = await createOnce(quiet);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBeUndefined();
    expect(refused.json).toEqual({
      detail: 'Request was throttled. Expected available in 30 seconds.',
      retry_after: 30,
    });
  });

  it('holds creates to 6 a minute with a burst of 1 while the credit is below $5, and only creates', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(
      { accounts: [{ username: 'low', tokens: [TOKEN], webhook_secret: 'whsec_ZGVtbw==', credit_usd: 4.5 }] },
      { clock },
    );
    expect((await createOnce(emulator)).status).toBe(201);
    const refused = await createOnce(emulator);
    expect([refused.status, refused.headers['retry-after'], refused.json]).toEqual([
      429,
      '10',
      {
        detail:
          'Request was throttled. Your rate limit for creating predictions is reduced to 6 requests per minute with a burst of 1 requests while you have less than $5.0 in credit.',
      },
    ]);
    for (let i = 0; i < 10; i++) expect((await api(emulator, '/v1/predictions')).status).toBe(200);
    clock.advance(10_000);
    expect((await createOnce(emulator)).status).toBe(201);

    const rich = await startReplicate({}, { clock });
    for (let i = 0; i < 5; i++) expect((await createOnce(rich)).status).toBe(201);
  });

  it('answers the limits in force and changes them with PUT /_emulator/limits', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({}, { clock });
    const limits = await api(emulator, '/_emulator/limits', { token: null });
    expect(limits.json).toMatchObject({
      create: { requests: 600, window_seconds: 60, burst: 600 },
      other: { requests: 3000, window_seconds: 60, burst: 3000 },
      low_credit: { below_usd: 5, create: { requests: 6, window_seconds: 60, burst: 1 } },
      retry_after_header: true,
    });
    await createOnce(emulator);
    const changed = await api(emulator, '/_emulator/limits', {
      method: 'PUT',
      token: null,
      body: { create: { burst: 1, requests: 60 }, low_credit: null },
    });
    expect(changed.json).toMatchObject({
      create: { requests: 60, window_seconds: 60, burst: 1 },
      low_credit: null,
    });
    // The bucket keeps what it holds, cut to the new burst: one more now, then one a second.
    expect((await createOnce(emulator)).status).toBe(201);
    expect((await createOnce(emulator)).status).toBe(429);
    clock.advance(1_000);
    expect((await createOnce(emulator)).status).toBe(201);
    const invalid = await api(emulator, '/_emulator/limits', {
      method: 'PUT',
      token: null,
      body: { create: { burst: 0 }, nope: 1 },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.json.detail).toMatch(
      /create\.burst: .*; nope: unknown key|nope: unknown key.*create\.burst/,
    );
    expect((await api(emulator, '/_emulator/limits', { token: null })).json.create.burst).toBe(1);
  });
});
