// The fal emulator's queue over real HTTP: submit (sub-path model ids, the URLs it answers with,
// auth), status (202 IN_QUEUE/IN_PROGRESS, 200 COMPLETED, ?logs=1), the result before and after
// completion, cancel's three answers, the status stream, and the CDN images. A manual clock
// moves emulated time; nothing sleeps.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './support/emulator.js';
import { fal, startFal, submit } from './emulator-fal-harness.js';

const QUICK = {
  generation: { queue_seconds: [1, 1] as [number, number] },
  models: { 'fal-ai/flux/dev': { seconds: [10, 10] as [number, number] } },
};

describe('submit', () => {
  it('answers IN_QUEUE with URLs on its own base that drop the model sub-path', async () => {
    const emulator = await startFal(QUICK, new ManualClock());
    const response = await fal(emulator.url, '/fal-ai/flux/dev', { body: { prompt: 'a red chair' } });
    expect(response.status).toBe(200);
    const id = response.json.request_id as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(response.headers['x-fal-request-id']).toBe(id);
    expect(response.json).toEqual({
      status: 'IN_QUEUE',
      request_id: id,
      response_url: `${emulator.url}/fal-ai/flux/requests/${id}`,
      status_url: `${emulator.url}/fal-ai/flux/requests/${id}/status`,
      cancel_url: `${emulator.url}/fal-ai/flux/requests/${id}/cancel`,
      queue_position: 0,
    });
  });

  it('refuses a missing, malformed, unknown or disabled key, and an unknown model', async () => {
    const emulator = await startFal({
      accounts: [{ id: 'a', keys: [{ key: 'good' }, { key: 'off', status: 'disabled' }] }],
    });
    const statuses = await Promise.all([
      fal(emulator.url, '/fal-ai/flux/dev', { body: { prompt: 'x' }, key: null }),
      fal(emulator.url, '/fal-ai/flux/dev', {
        body: { prompt: 'x' },
        headers: { authorization: 'Bearer good' },
      }),
      fal(emulator.url, '/fal-ai/flux/dev', { body: { prompt: 'x' }, key: 'nope' }),
      fal(emulator.url, '/fal-ai/flux/dev', { body: { prompt: 'x' }, key: 'off' }),
      fal(emulator.url, '/fal-ai/flux/dev', {
        body: { prompt: 'x' },
        headers: { authorization: 'key good' },
      }),
      fal(emulator.url, '/someone/unknown-app', { body: { prompt: 'x' }, key: 'good' }),
    ]);
    expect(statuses.map((r) => r.status)).toEqual([401, 401, 401, 403, 200, 404]);
    expect(statuses[0]!.json).toEqual({ detail: 'Missing authorization header' });
    expect(statuses.map((r) => r.text).join()).not.toContain('nope');
  });

  it('refuses a webhook that is not an RFC 3986 http(s) URI and a bad X-Fal-Request-Timeout', async () => {
    const emulator = await startFal();
    const bad = await Promise.all([
      fal(emulator.url, `/fal-ai/flux/dev?fal_webhook=${encodeURIComponent('https://Ï/hook')}`, {
        body: { prompt: 'x' },
      }),
      fal(emulator.url, `/fal-ai/flux/dev?fal_webhook=${encodeURIComponent('ftp://host/hook')}`, {
        body: { prompt: 'x' },
      }),
      fal(emulator.url, '/fal-ai/flux/dev', {
        body: { prompt: 'x' },
        headers: { 'x-fal-request-timeout': 'soon' },
      }),
      fal(emulator.url, '/fal-ai/flux/dev', {
        body: { prompt: 'x' },
        headers: { 'x-fal-request-timeout': '0.1' },
      }),
    ]);
    expect(bad.map((r) => r.status)).toEqual([400, 400, 400, 400]);
    expect(bad[0]!.json).toMatchObject({ error_type: 'bad_request' });
    expect(bad[2]!.headers['x-fal-error-type']).toBe('bad_request');
  });
});

describe('status and result', () => {
  it('goes IN_QUEUE (202) -> IN_PROGRESS (202) -> COMPLETED (200), with logs when asked', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(QUICK, clock);
    const queued = await submit(emulator, { prompt: 'a lamp' });
    const early = await fal(emulator.url, queued.status_url);
    expect(early.status).toBe(202);
    expect(early.json).toMatchObject({
      status: 'IN_QUEUE',
      queue_position: 0,
      request_id: queued.request_id,
      response_url: queued.response_url,
    });
    clock.advance(1000);
    const running = await fal(emulator.url, `${queued.status_url}?logs=1`);
    expect(running.status).toBe(202);
    expect(running.json).toMatchObject({
      status: 'IN_PROGRESS',
      logs: [{ message: 'Generating 1 image', level: 'INFO', source: 'USER' }],
    });
    expect((await fal(emulator.url, queued.status_url)).json.logs).toBeNull();
    clock.advance(10_000);
    const done = await fal(emulator.url, `${queued.status_url}?logs=1`);
    expect(done.status).toBe(200);
    expect(done.json).toMatchObject({
      status: 'COMPLETED',
      metrics: { inference_time: 10 },
      cancel_url: queued.cancel_url,
    });
    expect(done.json.logs).toHaveLength(2);
    expect(done.json).not.toHaveProperty('error');
  });

  it('answers the result 400 before completion, then the model output with its images on the CDN', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(QUICK, clock);
    const queued = await submit(emulator, {
      prompt: 'a lamp',
      image_size: { width: 640, height: 480 },
      num_images: 2,
      seed: 42,
      output_format: 'png',
    });
    const early = await fal(emulator.url, queued.response_url);
    expect([early.status, early.json]).toEqual([400, { detail: 'Request is still in progress' }]);
    clock.advance(11_000);
    const result = await fal(emulator.url, queued.response_url);
    expect(result.status).toBe(200);
    expect(result.json).toEqual({
      images: [0, 1].map((i) => ({
        url: `${emulator.url}/media/files/${queued.request_id}/${i}.png`,
        width: 640,
        height: 480,
        content_type: 'image/png',
      })),
      timings: { inference: 10 },
      seed: 42,
      has_nsfw_concepts: [false, false],
      prompt: 'a lamp',
    });
    const image = await fal(emulator.url, result.json.images[1].url, { key: null });
    expect(image.status).toBe(200);
    expect(image.headers['content-type']).toBe('image/png');
    const jpeg = await submit(emulator, { prompt: 'defaults' });
    clock.advance(11_000);
    const defaults = (await fal(emulator.url, jpeg.response_url)).json;
    expect(defaults.images[0]).toMatchObject({ width: 1024, height: 768, content_type: 'image/jpeg' });
    expect(Number.isInteger(defaults.seed)).toBe(true);
  });

  it('serves image bytes of the declared size and format', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(QUICK, clock);
    const queued = await submit(emulator, { prompt: 'a vase', image_size: 'portrait_16_9' });
    clock.advance(11_000);
    const { images } = (await fal(emulator.url, queued.response_url)).json;
    const bytes = Buffer.from(await (await fetch(images[0].url)).arrayBuffer());
    expect(await sharp(bytes).metadata()).toMatchObject({ format: 'jpeg', width: 576, height: 1024 });
    expect((await fal(emulator.url, images[0].url.replace('/0.jpeg', '/1.jpeg'), { key: null })).status).toBe(
      404,
    );
    expect((await fal(emulator.url, images[0].url.replace('.jpeg', '.png'), { key: null })).status).toBe(404);
  });

  it('hides a request from other accounts and under another app, and 404s an unknown id', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(
      {
        ...QUICK,
        accounts: [
          { id: 'a', keys: [{ key: 'ka' }] },
          { id: 'b', keys: [{ key: 'kb' }] },
        ],
      },
      clock,
    );
    const queued = await submit(emulator, { prompt: 'x' }, { key: 'ka' });
    expect((await fal(emulator.url, queued.status_url, { key: 'kb' })).status).toBe(404);
    expect(
      (await fal(emulator.url, queued.status_url.replace('/fal-ai/flux/', '/fal-ai/other/'), { key: 'ka' }))
        .status,
    ).toBe(404);
    expect(
      (
        await fal(emulator.url, `/fal-ai/flux/requests/00000000-0000-4000-8000-000000000000/status`, {
          key: 'ka',
        })
      ).json,
    ).toEqual({ detail: 'Request not found' });
    expect((await fal(emulator.url, queued.status_url, { key: 'ka' })).status).toBe(202);
  });
});

describe('validation', () => {
  it('accepts an invalid input at submit and completes it with the model 422', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(QUICK, clock);
    const queued = await submit(emulator, { image_size: 'huge', num_images: 9, output_format: 'gif' });
    clock.advance(2_000);
    const status = await fal(emulator.url, queued.status_url);
    expect(status.json).toMatchObject({ status: 'COMPLETED', error_type: 'validation_error' });
    const result = await fal(emulator.url, queued.response_url);
    expect(result.status).toBe(422);
    expect(result.json.detail.map((d: { loc: string[]; type: string }) => [d.loc.join('.'), d.type])).toEqual(
      [
        ['body.prompt', 'missing'],
        ['body.image_size', 'literal_error'],
        ['body.num_images', 'less_than_equal'],
        ['body.output_format', 'literal_error'],
      ],
    );
    const notJson = await fal(emulator.url, '/fal-ai/flux/dev', {
      body: '{oops',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(200);
  });
});

describe('cancel', () => {
  it('answers CANCELLATION_REQUESTED for a queued or running request, ALREADY_COMPLETED after, NOT_FOUND for none', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...QUICK, concurrency: 1 }, clock);
    const first = await submit(emulator, { prompt: 'one' });
    const second = await submit(emulator, { prompt: 'two' });
    expect(second.queue_position).toBe(1);
    clock.advance(2_000);
    const put = (url: string) => fal(emulator.url, url, { method: 'PUT' });
    expect([(await put(second.cancel_url)).status, (await put(second.cancel_url)).json]).toEqual([
      202,
      { status: 'ALREADY_COMPLETED' },
    ]);
    const running = await put(first.cancel_url);
    expect([running.status, running.json]).toEqual([202, { status: 'CANCELLATION_REQUESTED' }]);
    const status = await fal(emulator.url, first.status_url);
    expect(status.json).toMatchObject({ status: 'COMPLETED', error_type: 'client_cancelled' });
    const result = await fal(emulator.url, first.response_url);
    expect([result.status, result.json]).toEqual([
      499,
      { detail: 'Request cancelled', error_type: 'client_cancelled' },
    ]);
    expect((await put(first.cancel_url)).status).toBe(400);
    expect(
      (await put(first.cancel_url.replace(first.request_id, '00000000-0000-4000-8000-000000000000'))).json,
    ).toEqual({ status: 'NOT_FOUND' });
    expect((await fal(emulator.url, first.cancel_url)).status).toBe(405);
  });
});

describe('status stream', () => {
  it('sends each change as a server-sent event until COMPLETED', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(QUICK, clock);
    const queued = await submit(emulator, { prompt: 'stream' });
    const response = await fetch(`${queued.status_url}/stream`, {
      headers: { authorization: 'Key DEMO_FAL_KEY' },
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body!.getReader();
    const events: string[] = [];
    let buffer = '';
    const read = async (count: number) => {
      while (events.length < count) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += Buffer.from(value).toString('utf8');
        const parts = buffer.split('\n\n');
        buffer = parts.pop()!;
        events.push(...parts.map((p) => JSON.parse(p.replace(/^data: /, '')).status));
      }
    };
    await read(1);
    clock.advance(1_000);
    await read(2);
    clock.advance(10_000);
    await read(3);
    expect(events).toEqual(['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED']);
    expect((await reader.read()).done).toBe(true);
  });
});
