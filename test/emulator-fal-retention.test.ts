// Retention in the fal emulator: a completed request's result lives result_seconds (1 h), or
// large_result_seconds (6 min) when it is 10 KB or more; its images live on the CDN for their own
// time (X-Fal-Object-Lifecycle-Preference overrides it); after that 404, and stats count what was
// deleted before a client got it. Then the state_file: a restarted emulator knows every request.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from './support/emulator.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';
import { fal, startFal, submit } from './emulator-fal-harness.js';

afterAll(removeTempDirs);

const FIXED = {
  generation: { queue_seconds: [0, 0] as [number, number] },
  models: { 'fal-ai/flux/dev': { seconds: [10, 10] as [number, number] } },
};

describe('result retention', () => {
  it('keeps a result result_seconds after completion, then answers 404; the status stays COMPLETED', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...FIXED, retention: { result_seconds: 3600 } }, clock);
    const fetched = await submit(emulator, { prompt: 'fetched' });
    const forgotten = await submit(emulator, { prompt: 'forgotten' });
    clock.advance(10_000 + 3_599_999);
    expect((await fal(emulator.url, fetched.response_url)).status).toBe(200);
    clock.advance(1);
    expect((await fal(emulator.url, fetched.response_url)).json).toEqual({ detail: 'Request not found' });
    expect((await fal(emulator.url, forgotten.status_url)).json.status).toBe('COMPLETED');
    const stats = emulator.stats();
    expect(stats.phases.deleted).toBe(2);
    expect(stats.retention).toMatchObject({ results_fetched: 1, results_deleted_unfetched: 1 });
  });

  it('keeps a result of 10 KB or more only large_result_seconds: sync_mode data URIs, a long prompt', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...FIXED, concurrency: 3 }, clock);
    const small = await submit(emulator, { prompt: 'small' });
    const inline = await submit(emulator, { prompt: 'inline', sync_mode: true });
    const long = await submit(emulator, { prompt: 'word '.repeat(2100) });
    clock.advance(10_000);
    const synced = await fal(emulator.url, inline.response_url);
    expect(synced.json.images[0].url).toMatch(/^data:image\/jpeg;base64,\/9j\//);
    expect(synced.text.length).toBeGreaterThan(10_240);
    clock.advance(360_000);
    const answers = await Promise.all([small, inline, long].map((q) => fal(emulator.url, q.response_url)));
    expect(answers.map((a) => a.status)).toEqual([200, 404, 404]);
  });
});

describe('CDN retention', () => {
  it('serves images cdn_seconds after completion, then 404, and counts the ones never downloaded', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...FIXED, retention: { cdn_seconds: 600 } }, clock);
    const queued = await submit(emulator, { prompt: 'cdn', num_images: 2, image_size: 'square' });
    const custom = await submit(
      emulator,
      { prompt: 'custom', image_size: 'square' },
      {
        headers: { 'x-fal-object-lifecycle-preference': JSON.stringify({ expiration_duration_seconds: 60 }) },
      },
    );
    clock.advance(10_000);
    const { images } = (await fal(emulator.url, queued.response_url)).json;
    const [customImage] = (await fal(emulator.url, custom.response_url)).json.images;
    expect((await fal(emulator.url, images[0].url, { key: null })).status).toBe(200);
    clock.advance(60_000);
    expect((await fal(emulator.url, customImage.url, { key: null })).status).toBe(404);
    clock.advance(539_999);
    expect((await fal(emulator.url, images[1].url, { method: 'HEAD', key: null })).status).toBe(200);
    clock.advance(1);
    expect((await fal(emulator.url, images[0].url, { key: null })).status).toBe(404);
    expect(emulator.stats().retention).toMatchObject({
      images_downloaded: 1,
      images_deleted_undownloaded: 2,
    });
    const bad = await fal(emulator.url, '/fal-ai/flux/dev', {
      body: { prompt: 'x' },
      headers: { 'x-fal-object-lifecycle-preference': '{"expiration_duration_seconds": "soon"}' },
    });
    expect(bad.status).toBe(400);
  });
});

describe('state_file', () => {
  it('lets a restarted emulator answer for every request it accepted, positions and times re-derived', async () => {
    const stateFile = join(tempDir(), 'fal', 'state.jsonl');
    const clock = new ManualClock();
    const config = { ...FIXED, concurrency: 1, state_file: stateFile };
    const first = await startFal(config, clock);
    const queued = [];
    for (let i = 0; i < 4; i++) queued.push(await submit(first, { prompt: `p${i}` }));
    clock.advance(2_000);
    await fal(first.url, queued[2]!.cancel_url, { method: 'PUT' });
    await fal(first.url, '/_emulator/webhook-keys', { method: 'POST', key: null });
    const jwks = (await fal(first.url, '/.well-known/jwks.json')).json;
    await first.close();

    const second = await startFal({ ...config, port: Number(new URL(first.url).port) }, clock);
    expect(second.url).toBe(first.url);
    const statuses = await Promise.all(queued.map((q) => fal(second.url, q.status_url)));
    expect(statuses.map((s) => [s.json.status, s.json.queue_position, s.json.error_type])).toEqual([
      ['IN_PROGRESS', undefined, undefined],
      ['IN_QUEUE', 0, undefined],
      ['COMPLETED', undefined, 'client_cancelled'],
      ['IN_QUEUE', 1, undefined],
    ]);
    expect((await fal(second.url, '/.well-known/jwks.json')).json).toEqual(jwks);
    const added = await submit(second, { prompt: 'after restart' });
    expect(queued.map((q) => q.request_id)).not.toContain(added.request_id);
    clock.advance(40_000);
    expect((await fal(second.url, queued[3]!.response_url)).status).toBe(200);
    expect(second.stats().requests_total).toBe(5);
  });
});
