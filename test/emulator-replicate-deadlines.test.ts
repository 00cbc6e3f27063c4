// Deadlines, cancels, sync mode and billing over real HTTP, on a manual clock: Cancel-After aborts
// a prediction that has not started (never billed) and cancels a running one (billed for the time
// it ran); POST .../cancel does the same at once; `Prefer: wait[=n]` holds the create until the
// prediction ends or n seconds pass. Durations are scaled by time_scale.
import { describe, expect, it, vi } from 'vitest';
import type { RunningReplicateEmulator } from '../emulator/replicate/index.js';
import {
  api,
  create,
  getPrediction,
  ManualClock,
  SCHNELL,
  SDXL_VERSION,
  startReplicate,
  T0,
  type Json,
} from './emulator-replicate-helpers.js';

async function started(queue: number, run: number, config: object = {}) {
  const clock = new ManualClock(T0);
  const emulator = await startReplicate(
    { generation: { queue_seconds: queue, run_seconds: run }, ...config },
    { clock },
  );
  return { clock, emulator };
}

const sdxl = (emulator: RunningReplicateEmulator, headers: Record<string, string> = {}) =>
  create(
    emulator,
    { version: SDXL_VERSION, input: { num_outputs: 2 } },
    { path: '/v1/predictions', headers },
  );

describe('Cancel-After', () => {
  it('aborts a prediction whose deadline comes before it starts, and bills nothing', async () => {
    const { clock, emulator } = await started(10, 3);
    const created = await sdxl(emulator, { 'cancel-after': '5s' });
    expect(created.deadline).toBe('2026-01-01T00:00:05.000Z');
    clock.advance(4_999);
    expect((await getPrediction(emulator, created.id)).status).toBe('starting');
    clock.advance(1);
    const aborted = await getPrediction(emulator, created.id);
    expect(aborted).toMatchObject({
      status: 'aborted',
      started_at: null,
      completed_at: '2026-01-01T00:00:05.000Z',
      output: null,
      error: null,
      metrics: { total_time: 5 },
    });
    expect(aborted.metrics.predict_time).toBeUndefined();
    clock.advance(60_000);
    expect((await getPrediction(emulator, created.id)).status).toBe('aborted');
    expect(emulator.stats().billing).toMatchObject({
      billed_usd: 0,
      billed_predictions: 0,
      aborted_unbilled: 1,
    });
  });

  it('cancels a prediction running at its deadline, billed for the time it ran', async () => {
    const { clock, emulator } = await started(2, 10);
    const created = await sdxl(emulator, { 'cancel-after': '5' });
    clock.advance(5_000);
    expect(await getPrediction(emulator, created.id)).toMatchObject({
      status: 'canceled',
      started_at: '2026-01-01T00:00:02.000Z',
      completed_at: '2026-01-01T00:00:05.000Z',
      output: null,
      metrics: { predict_time: 3, total_time: 5 },
    });
    const { billing } = emulator.stats();
    expect(billing.billed_usd).toBeCloseTo(3 * 0.000975, 9);
    expect(billing.credit_usd.demo).toBeCloseTo(1000 - 3 * 0.000975, 9);
  });

  it('leaves a prediction that ends before its deadline alone', async () => {
    const { clock, emulator } = await started(1, 2);
    const created = await create(
      emulator,
      { input: { prompt: 'p', num_outputs: 3 } },
      { headers: { 'cancel-after': '1m' } },
    );
    clock.advance(120_000);
    expect(await getPrediction(emulator, created.id)).toMatchObject({
      status: 'succeeded',
      deadline: '2026-01-01T00:01:00.000Z',
    });
    expect(emulator.stats().billing.billed_usd).toBeCloseTo(3 * 0.003, 9);
  });

  it('scales the deadline, and the run timeout, by time_scale', async () => {
    const { clock, emulator } = await started(10, 3, { time_scale: 0.5 });
    const created = await create(
      emulator,
      { input: { prompt: 'p' } },
      { headers: { 'cancel-after': '1h30m' } },
    );
    expect(created.deadline).toBe('2026-01-01T00:45:00.000Z');
    const early = await create(emulator, { input: { prompt: 'p' } }, { headers: { 'cancel-after': '8s' } });
    clock.advance(4_000);
    expect((await getPrediction(emulator, early.id)).status).toBe('aborted');
    expect((await getPrediction(emulator, created.id)).status).toBe('starting');
  });
});

describe('cancel', () => {
  it('cancels a starting prediction before it runs (never billed) and a processing one now (billed)', async () => {
    const { clock, emulator } = await started(2, 10);
    const waiting = await sdxl(emulator);
    const running = await sdxl(emulator);
    const answer = await api(emulator, `/v1/predictions/${waiting.id}/cancel`, { method: 'POST' });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ id: waiting.id, status: 'canceled', started_at: null });
    clock.advance(4_000);
    expect((await getPrediction(emulator, waiting.id)).status).toBe('canceled');
    const stopped = await api(emulator, `/v1/predictions/${running.id}/cancel`, { method: 'POST' });
    expect(stopped.json).toMatchObject({
      status: 'canceled',
      started_at: '2026-01-01T00:00:02.000Z',
      completed_at: '2026-01-01T00:00:04.000Z',
      metrics: { predict_time: 2 },
    });
    clock.advance(60_000);
    expect((await getPrediction(emulator, running.id)).status).toBe('canceled');
    const { billing } = emulator.stats();
    expect(billing).toMatchObject({ billed_predictions: 1, canceled_before_start_unbilled: 1 });
    expect(billing.billed_usd).toBeCloseTo(2 * 0.000975, 9);
  });

  it('answers an ended prediction as it is', async () => {
    const { clock, emulator } = await started(1, 1);
    const created = await create(emulator);
    clock.advance(2_000);
    const answer = await api(emulator, `/v1/predictions/${created.id}/cancel`, { method: 'POST' });
    expect([answer.status, answer.json.status]).toEqual([200, 'succeeded']);
    expect(answer.json.output).toHaveLength(1);
  });
});

/** Sends a create without awaiting it; resolves, with its answer pending, once the prediction exists. */
async function pendingCreate(
  emulator: RunningReplicateEmulator,
  headers: Record<string, string>,
  body: object = { input: { prompt: 'p' } },
) {
  const before = emulator.stats().predictions_total;
  const response = api(emulator, SCHNELL, { method: 'POST', body, headers });
  await vi.waitFor(() => expect(emulator.stats().predictions_total).toBe(before + 1), { interval: 5 });
  // Wrapped: an async function returning the promise itself would wait for it.
  return { response };
}

/** Whether `promise` has settled once the I/O callbacks now pending have run. */
async function settlesAtOnce(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe('Prefer: wait', () => {
  it('holds the create until the prediction has ended and answers it with its output', async () => {
    const { clock, emulator } = await started(2, 3);
    const { response } = await pendingCreate(emulator, { prefer: 'wait' });
    clock.advance(4_999);
    expect(await settlesAtOnce(response)).toBe(false);
    clock.advance(1);
    const answer = await response;
    expect(answer.status).toBe(201);
    expect(answer.headers['preference-applied']).toBe('wait');
    expect(answer.json).toMatchObject({
      status: 'succeeded',
      output: [expect.stringMatching(/out-0\.webp$/)],
    });
  });

  it('answers the prediction as it is after wait=n seconds', async () => {
    const { clock, emulator } = await started(2, 30);
    const { response } = await pendingCreate(emulator, { prefer: 'wait=5' });
    clock.advance(5_000);
    const answer = await response;
    expect(answer.headers['preference-applied']).toBe('wait=5');
    expect(answer.json).toMatchObject({ status: 'processing', output: null });
    // Nothing of the held request is left on the clock.
    expect(clock.pendingTimes()).toEqual([]);
  });

  it('lets go as soon as the prediction is canceled meanwhile, or its deadline passes', async () => {
    const { clock, emulator } = await started(2, 30);
    const { response: held } = await pendingCreate(emulator, { prefer: 'wait=60' });
    const [{ id }] = [(await api(emulator, '/v1/predictions')).json.results[0] as Json];
    clock.advance(3_000);
    await api(emulator, `/v1/predictions/${id}/cancel`, { method: 'POST' });
    const answer = await held;
    expect(answer.json).toMatchObject({ id, status: 'canceled', completed_at: '2026-01-01T00:00:03.000Z' });

    const { response: deadline } = await pendingCreate(emulator, { prefer: 'wait', 'cancel-after': '10s' });
    clock.advance(10_000);
    expect((await deadline).json).toMatchObject({
      status: 'canceled',
      completed_at: '2026-01-01T00:00:13.000Z',
    });
  });

  it('holds wait=n scaled by time_scale, and at most 60 seconds', async () => {
    const { clock, emulator } = await started(2, 300, { time_scale: 0.1 });
    const { response } = await pendingCreate(emulator, { prefer: 'wait=600' });
    clock.advance(5_999);
    expect(await settlesAtOnce(response)).toBe(false);
    clock.advance(1);
    const answer = await response;
    expect([answer.headers['preference-applied'], answer.json.status]).toEqual(['wait=60', 'processing']);
  });
});

describe('billing', () => {
  it('bills succeeded predictions by image when they end, and refuses creates with 402 once the credit is gone', async () => {
    const token = 'r8_poor';
    const { clock, emulator } = await started(1, 1, {
      accounts: [{ username: 'poor', tokens: [token], webhook_secret: 'whsec_ZGVtbw==', credit_usd: 0.01 }],
      limits: { low_credit: null },
    });
    for (let i = 0; i < 3; i++) await create(emulator, { input: { prompt: `p${i}` } }, { token });
    // Billed when they end, not at create: a fourth create still goes through.
    await create(emulator, { input: { prompt: 'p3' } }, { token });
    clock.advance(2_000);
    expect(emulator.stats().billing).toMatchObject({
      billed_predictions: 4,
      billed_usd: 0.012,
      credit_usd: { poor: -0.002 },
    });
    const refused = await api(emulator, SCHNELL, {
      method: 'POST',
      token,
      body: { input: { prompt: 'p4' } },
    });
    expect([refused.status, refused.json]).toEqual([
      402,
      {
        title: 'Insufficient credit',
        detail:
          'You have insufficient credit to run this model. Go to https://replicate.com/account/billing#billing to purchase credit. Once you purchase credit, please wait a few minutes before trying again.',
        status: 402,
      },
    ]);
    expect(emulator.stats().predictions_total).toBe(4);
  });
});
