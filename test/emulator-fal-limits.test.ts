// fal's concurrency limit in the emulator: requests over it wait IN_QUEUE first in first out with
// a true queue_position and are never refused; the limit is a config knob per account and can be
// changed on a running emulator; X-Fal-Request-Timeout is a deadline to start (queue wait
// included) that ends the request with a user 504, not billed. Ground truth audits the peak.
import { describe, expect, it } from 'vitest';
import { ManualClock } from './support/emulator.js';
import { fal, startFal, submit } from './emulator-fal-harness.js';

const FIXED = {
  generation: { queue_seconds: [0, 0] as [number, number] },
  models: { 'fal-ai/flux/dev': { seconds: [10, 10] as [number, number] } },
};

async function statuses(emulator: { url: string }, queued: { status_url: string }[], key?: string) {
  const answers = await Promise.all(queued.map((q) => fal(emulator.url, q.status_url, key ? { key } : {})));
  return answers.map((a) =>
    a.json.status === 'IN_QUEUE' ? `Q${a.json.queue_position}` : a.json.status === 'IN_PROGRESS' ? 'P' : 'C',
  );
}

describe('concurrency', () => {
  it('runs two at once by default and queues the rest first in first out, never refusing one', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(FIXED, clock);
    const queued = [];
    for (let i = 0; i < 5; i++) queued.push(await submit(emulator, { prompt: `p${i}` }));
    expect(queued.map((q) => q.queue_position)).toEqual([0, 0, 0, 1, 2]);
    expect(await statuses(emulator, queued)).toEqual(['P', 'P', 'Q0', 'Q1', 'Q2']);
    clock.advance(10_000);
    expect(await statuses(emulator, queued)).toEqual(['C', 'C', 'P', 'P', 'Q0']);
    clock.advance(20_000);
    expect(await statuses(emulator, queued)).toEqual(['C', 'C', 'C', 'C', 'C']);
    const stats = emulator.stats();
    expect(stats.peak_in_progress).toBe(2);
    expect(stats.concurrency).toEqual({ default: 2, accounts: {} });
    expect(stats.phases.succeeded).toBe(5);
  });

  it('takes the limit from the config, per account too', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(
      {
        ...FIXED,
        concurrency: 40,
        accounts: [
          { id: 'big', keys: [{ key: 'kbig' }] },
          { id: 'small', concurrency: 1, keys: [{ key: 'ksmall' }] },
        ],
      },
      clock,
    );
    const big = await Promise.all(
      Array.from({ length: 41 }, (_, i) => submit(emulator, { prompt: `b${i}` }, { key: 'kbig' })),
    );
    const small = [
      await submit(emulator, { prompt: 's1' }, { key: 'ksmall' }),
      await submit(emulator, { prompt: 's2' }, { key: 'ksmall' }),
    ];
    expect((await statuses(emulator, big, 'kbig')).filter((s) => s === 'P')).toHaveLength(40);
    expect(await statuses(emulator, small, 'ksmall')).toEqual(['P', 'Q0']);
    clock.advance(30_000);
    expect(emulator.stats().peak_in_progress).toBe(41);
  });

  it('changes the limits on a running emulator through PUT /_emulator/limits', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(FIXED, clock);
    const queued = await Promise.all(
      Array.from({ length: 4 }, (_, i) => submit(emulator, { prompt: `p${i}` })),
    );
    clock.advance(1_000);
    const put = await fal(emulator.url, '/_emulator/limits', {
      method: 'PUT',
      key: null,
      body: { concurrency: 4 },
    });
    expect(put.json).toEqual({ default: 4, accounts: {} });
    expect(await statuses(emulator, queued)).toEqual(['P', 'P', 'P', 'P']);
    const perAccount = await fal(emulator.url, '/_emulator/limits', {
      method: 'PUT',
      key: null,
      body: { accounts: { acct_demo: 1 } },
    });
    expect(perAccount.json).toEqual({ default: 4, accounts: { acct_demo: 1 } });
    const bad = await Promise.all([
      fal(emulator.url, '/_emulator/limits', { method: 'PUT', key: null, body: { concurrency: 0 } }),
      fal(emulator.url, '/_emulator/limits', { method: 'PUT', key: null, body: { accounts: { nobody: 2 } } }),
      fal(emulator.url, '/_emulator/limits', { method: 'PUT', key: null, body: { limit: 2 } }),
    ]);
    expect(bad.map((r) => r.status)).toEqual([400, 400, 400]);
    expect((await fal(emulator.url, '/_emulator/limits', { key: null })).json).toEqual({
      default: 4,
      accounts: { acct_demo: 1 },
    });
  });
});

describe('X-Fal-Request-Timeout', () => {
  it('ends a request that has not started by its deadline with a user 504, not billed; a started one runs on', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...FIXED, concurrency: 1 }, clock);
    const first = await submit(emulator, { prompt: 'long' }, { headers: { 'x-fal-request-timeout': '3' } });
    const second = await submit(emulator, { prompt: 'late' }, { headers: { 'x-fal-request-timeout': '3' } });
    const third = await submit(emulator, { prompt: 'patient' });
    expect(third.queue_position).toBe(1);
    clock.advance(3_000);
    const status = await fal(emulator.url, second.status_url);
    expect(status.json).toMatchObject({
      status: 'COMPLETED',
      error_type: 'request_timeout',
      metrics: { inference_time: null },
    });
    const result = await fal(emulator.url, second.response_url);
    expect(result.status).toBe(504);
    expect(result.headers['x-fal-request-timeout-type']).toBe('user');
    expect(result.headers['x-fal-error-type']).toBe('request_timeout');
    expect((await fal(emulator.url, third.status_url)).json).toMatchObject({
      status: 'IN_QUEUE',
      queue_position: 0,
    });
    clock.advance(7_000);
    expect((await fal(emulator.url, first.response_url)).status).toBe(200);
    expect((await fal(emulator.url, third.status_url)).json.status).toBe('IN_PROGRESS');
    const { billing } = emulator.stats();
    expect(billing.unbilled.timed_out).toBe(1);
    expect(billing.billed_requests).toBe(1);
  });

  it('reads the deadline as emulated seconds, scaled like everything else (a knob turns that off)', async () => {
    const clock = new ManualClock();
    const slow = {
      ...FIXED,
      models: { 'fal-ai/flux/dev': { seconds: [100, 100] as [number, number] } },
      concurrency: 1,
      time_scale: 0.01,
    };
    const scaled = await startFal(slow, clock);
    const unscaled = await startFal({ ...slow, scale_client_durations: false }, clock);
    for (const emulator of [scaled, unscaled]) {
      await submit(emulator, { prompt: 'a' });
      await submit(emulator, { prompt: 'b' }, { headers: { 'x-fal-request-timeout': '5' } });
    }
    clock.advance(500);
    const truth = async (emulator: { url: string }) =>
      (await fal(emulator.url, '/_emulator/requests', { key: null })).text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
    expect((await truth(scaled))[1]).toMatchObject({ outcome: 'timed_out', ended_at_ms: expect.any(Number) });
    expect((await truth(unscaled))[1]).toMatchObject({
      phase: 'queued',
      start_deadline_ms: clock.now() - 500 + 5_000,
    });
  });
});

describe('ground truth', () => {
  it('lists every request with its times for audits: twice-submitted prompts, peak concurrency', async () => {
    const clock = new ManualClock(1_000_000);
    const emulator = await startFal({ ...FIXED, concurrency: 1 }, clock);
    await submit(emulator, { prompt: 'same' });
    await submit(emulator, { prompt: 'same' });
    clock.advance(25_000);
    const lines = (await fal(emulator.url, '/_emulator/requests', { key: null })).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.prompt, l.phase, l.started_at_ms, l.ended_at_ms, l.billed])).toEqual([
      ['same', 'succeeded', 1_000_000, 1_010_000, true],
      ['same', 'succeeded', 1_010_000, 1_020_000, true],
    ]);
    expect(lines[0]).toMatchObject({
      model: 'fal-ai/flux/dev',
      account: 'acct_demo',
      result_fetched_at_ms: null,
      images_downloaded: [false],
    });
  });
});
