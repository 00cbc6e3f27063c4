// Fault knobs of the Replicate emulator over real HTTP: a seeded 5xx per request class, a create
// whose answer is lost after the prediction was made, downloads cut half-way or throttled, and the
// state_file journal that lets a restarted emulator keep every prediction it created.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { startReplicateEmulator } from '../emulator/replicate/index.js';
import {
  api,
  create,
  getPrediction,
  ManualClock,
  SCHNELL,
  startReplicate,
  startWebhookReceiver,
  T0,
  type Json,
} from './emulator-replicate-helpers.js';

const timing = { generation: { queue_seconds: 2, run_seconds: 3 } };
const rates = (over: object) => ({ create: 0, get: 0, list: 0, cancel: 0, other: 0, delivery: 0, ...over });

describe('faults', () => {
  it('answers a whole request class 5xx at rate 1, and leaves the other classes alone', async () => {
    const emulator = await startReplicate({
      faults: { server_error_rate: rates({ create: 1, delivery: 1 }) },
    });
    for (let i = 0; i < 5; i++) {
      const response = await api(emulator, SCHNELL, { method: 'POST', body: { input: { prompt: 'p' } } });
      expect([500, 502, 503]).toContain(response.status);
      expect(response.json).toEqual({ detail: expect.any(String), status: response.status });
    }
    expect((await api(emulator, '/v1/predictions')).status).toBe(200);
    expect(emulator.stats().predictions_total).toBe(0);
    expect(emulator.stats().faults).toMatchObject({ server_error_create: 5 });
    const file = await fetch(`${emulator.deliveryUrl}/xezq/anything/out-0.webp`);
    expect([500, 502, 503]).toContain(file.status);
  });

  it('draws server faults from the seed: the same requests fail again with the same seed', async () => {
    const statuses = async () => {
      const emulator = await startReplicate({ seed: 7, faults: { server_error_rate: rates({ get: 0.5 }) } });
      const out: number[] = [];
      for (let i = 0; i < 20; i++) out.push((await api(emulator, '/v1/predictions/x')).status);
      return out;
    };
    const first = await statuses();
    expect(first).toContain(404);
    expect(first.some((s) => s >= 500)).toBe(true);
    expect(await statuses()).toEqual(first);
  });

  it('creates the prediction and then drops the connection (lost create response)', async () => {
    const emulator = await startReplicate({ faults: { lost_create_response_rate: 1 } });
    await expect(
      api(emulator, SCHNELL, { method: 'POST', body: { input: { prompt: 'ghost' } } }),
    ).rejects.toThrow();
    const [made] = (await api(emulator, '/v1/predictions')).json.results;
    expect(made).toMatchObject({ input: { prompt: 'ghost' }, status: 'starting' });
    expect(emulator.stats().faults).toMatchObject({ lost_create_response: 1 });
    expect(emulator.stats().requests['POST /v1/models/{owner}/{name}/predictions']).toEqual({ '201': 1 });
  });

  it('cuts a download half-way, shorter than its content-length, and does not count it as downloaded', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ ...timing, faults: { truncate_download_rate: 1 } }, { clock });
    const created = await create(emulator);
    clock.advance(5_000);
    const [url] = (await getPrediction(emulator, created.id)).output;
    const response = await request(url);
    const declared = Number(response.headers['content-length']);
    let received = 0;
    await expect(
      (async () => {
        for await (const chunk of response.body) received += (chunk as Buffer).length;
      })(),
    ).rejects.toThrow();
    expect(received).toBe(Math.floor(declared / 2));
    expect(emulator.stats()).toMatchObject({ faults: { truncated_download: 1 }, outputs: { downloaded: 0 } });
  });

  it('throttles downloads to slow_download_kbps', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ ...timing, faults: { slow_download_kbps: 8 } }, { clock });
    const created = await create(emulator, { input: { prompt: 'p', output_format: 'jpg' } });
    clock.advance(5_000);
    const [url] = (await getPrediction(emulator, created.id)).output;
    const response = await request(url);
    const size = Number(response.headers['content-length']);
    let received = 0;
    const done = (async () => {
      for await (const chunk of response.body) received += (chunk as Buffer).length;
    })();
    // 8 kbps is 1,000 bytes a second; after half the time, about half the file.
    const seconds = size / 1000;
    for (let t = 0; t < (seconds / 2) * 1000; t += 20) clock.advance(20);
    await vi.waitFor(() => expect(received).toBeGreaterThan(size * 0.3), { interval: 5 });
    expect(received).toBeLessThan(size * 0.7);
    for (let t = 0; t < (seconds / 2) * 1000 + 100; t += 20) clock.advance(20);
    await done;
    expect(received).toBe(size);
    expect(emulator.stats().outputs.downloaded).toBe(1);
  });
});

describe('state_file', () => {
  it('keeps every prediction, its future and its files across a restart on the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replicate-journal-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const clock = new ManualClock(T0);
    const config = { ...timing, host: '127.0.0.1', port: 0, state_file: join(dir, 'journal.jsonl') };
    const first = await startReplicateEmulator({ config, clock });
    const done = await create(first, { input: { prompt: 'done' } });
    const canceled = await create(first, { input: { prompt: 'canceled' } });
    await api(first, `/v1/predictions/${canceled.id}/cancel`, { method: 'POST' });
    const receiver = await startWebhookReceiver([], clock);
    const pending = await create(first, {
      input: { prompt: 'later' },
      webhook: receiver.base,
      webhook_events_filter: ['completed'],
    });
    clock.advance(1_000);
    const before = (await api(first, '/v1/predictions')).json.results;
    await first.close();

    const second = await startReplicateEmulator({ config, clock });
    onTestFinished(() => second.close());
    expect((await api(second, '/v1/predictions')).json.results).toEqual(
      before.map((p: Json) => ({ ...p, urls: expect.any(Object) })),
    );
    clock.advance(4_000);
    expect(await getPrediction(second, done.id)).toMatchObject({
      status: 'succeeded',
      input: { prompt: 'done' },
    });
    expect((await getPrediction(second, canceled.id)).status).toBe('canceled');
    const [hook] = await receiver.until(1);
    expect(JSON.parse(hook!.body)).toMatchObject({ id: pending.id, status: 'succeeded' });
    const [url] = (await getPrediction(second, pending.id)).output;
    expect((await fetch(url)).status).toBe(200);
  });
});
