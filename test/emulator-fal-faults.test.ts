// The fal emulator's fault knobs over real HTTP: 5xx per request class (nothing created by a
// failed submit), the queue's invisible runner retries (and what no-retry changes), stuck
// requests, moderation as the model answers it (black images flagged, or a 422), model failures,
// truncated and slow downloads, wrong images, and a submit whose answer is lost; and what each
// means for the bill.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './support/emulator.js';
import { fal, startFal, submit } from './emulator-fal-harness.js';

const FIXED = {
  generation: { queue_seconds: [0, 0] as [number, number] },
  models: { 'fal-ai/flux/dev': { seconds: [10, 10] as [number, number] } },
};
const rates = (overrides: Record<string, number>) => ({
  submit: 0,
  status: 0,
  result: 0,
  cancel: 0,
  cdn: 0,
  ...overrides,
});

async function truth(emulator: { url: string }) {
  const text = (await fal(emulator.url, '/_emulator/requests', { key: null })).text.trim();
  return text === '' ? [] : text.split('\n').map((line) => JSON.parse(line));
}

describe('server errors per request class', () => {
  it('fails a submit before it creates anything, and only the class it is set for', async () => {
    const emulator = await startFal({ ...FIXED, faults: { server_error_rates: rates({ submit: 1 }) } });
    const failed = await fal(emulator.url, '/fal-ai/flux/dev', { body: { prompt: 'x' } });
    expect([500, 502, 503]).toContain(failed.status);
    expect(failed.json).toMatchObject({ error_type: 'internal_error' });
    expect(emulator.stats().requests_total).toBe(0);
    expect((await fal(emulator.url, '/_emulator/stats', { key: null })).status).toBe(200);
    const other = await startFal({ ...FIXED, faults: { server_error_rates: rates({ status: 1 }) } });
    const queued = await submit(other, { prompt: 'x' });
    expect((await fal(other.url, queued.status_url)).status).toBeGreaterThanOrEqual(500);
    expect((await fal(other.url, queued.response_url)).status).toBe(400);
    expect(other.stats().faults.server_error).toBe(1);
  });
});

describe('runner retries inside the queue', () => {
  it('hides retried attempts (only slower, a new gateway_request_id) and fails with 503 once they run out', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(
      { ...FIXED, faults: { runner_retry_rate: 0.5, runner_retry_seconds: 3 } },
      clock,
    );
    for (let i = 0; i < 30; i++) await submit(emulator, { prompt: `p${i}` });
    clock.advance(200_000);
    const lines = await truth(emulator);
    const retried = lines.find((l) => l.runner_retries > 0 && l.outcome === 'succeeded');
    expect(retried).toBeDefined();
    expect(retried.gateway_request_id).not.toBe(retried.request_id);
    expect(retried.ended_at_ms - retried.started_at_ms).toBe(10_000 + 3_000 * retried.runner_retries);
    const clean = lines.find((l) => l.runner_retries === 0);
    expect(clean.gateway_request_id).toBe(clean.request_id);

    const broken = await startFal(
      { ...FIXED, faults: { runner_retry_rate: 1, runner_retry_seconds: 1 } },
      clock,
    );
    const exhausted = await submit(broken, { prompt: 'x' });
    const noRetry = await submit(broken, { prompt: 'y' }, { headers: { 'x-fal-no-retry': '1' } });
    clock.advance(30_000);
    for (const queued of [exhausted, noRetry]) {
      const result = await fal(broken.url, queued.response_url);
      expect([result.status, result.json.error_type]).toEqual([503, 'runner_connection_error']);
    }
    const [a, b] = await truth(broken);
    expect(a.ended_at_ms - a.started_at_ms).toBe(20_000);
    expect(b.ended_at_ms - b.started_at_ms).toBe(10_000);
    expect(broken.stats().billing.unbilled.runner_unavailable).toBe(2);
  });
});

describe('stuck requests', () => {
  it('stay IN_PROGRESS forever, holding their slot until cancelled', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...FIXED, concurrency: 1, faults: { stuck_request_rate: 1 } }, clock);
    const stuck = await submit(emulator, { prompt: 'stuck' });
    const next = await submit(emulator, { prompt: 'next' });
    clock.advance(3_600_000);
    expect((await fal(emulator.url, stuck.status_url)).json.status).toBe('IN_PROGRESS');
    expect((await fal(emulator.url, next.status_url)).json).toMatchObject({
      status: 'IN_QUEUE',
      queue_position: 0,
    });
    expect((await fal(emulator.url, stuck.cancel_url, { method: 'PUT' })).status).toBe(202);
    expect((await fal(emulator.url, next.status_url)).json.status).toBe('IN_PROGRESS');
    expect(emulator.stats().faults.stuck_request).toBe(2);
  });
});

describe('moderation', () => {
  it('answers a flagged prompt with black images and has_nsfw_concepts, billed, by default', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(FIXED, clock);
    const flagged = await submit(emulator, {
      prompt: 'a Forbidden scene',
      num_images: 2,
      image_size: 'square',
    });
    const unchecked = await submit(emulator, {
      prompt: 'a forbidden scene',
      enable_safety_checker: false,
      image_size: 'square',
    });
    clock.advance(10_000);
    const result = await fal(emulator.url, flagged.response_url);
    expect(result.status).toBe(200);
    expect(result.json.has_nsfw_concepts).toEqual([true, true]);
    const image = Buffer.from(await (await fetch(result.json.images[0].url)).arrayBuffer());
    expect((await sharp(image).stats()).channels.map((c) => c.max)).toEqual([0, 0, 0]);
    const free = await fal(emulator.url, unchecked.response_url);
    expect(free.json.has_nsfw_concepts).toEqual([false]);
    const other = Buffer.from(await (await fetch(free.json.images[0].url)).arrayBuffer());
    expect((await sharp(other).stats()).channels[0]!.max).toBeGreaterThan(0);
    expect(emulator.stats().billing).toMatchObject({ billed_requests: 2, billed_images: 3 });
  });

  it('answers 422 content_policy_violation, not billed, for a model that refuses', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(
      { ...FIXED, models: { 'fal-ai/flux/dev': { seconds: [10, 10], moderation: 'error' } } },
      clock,
    );
    const queued = await submit(emulator, { prompt: 'forbidden' });
    clock.advance(10_000);
    expect((await fal(emulator.url, queued.status_url)).json.error_type).toBe('content_policy_violation');
    const result = await fal(emulator.url, queued.response_url);
    expect(result.status).toBe(422);
    expect(result.json.detail[0]).toMatchObject({
      type: 'content_policy_violation',
      loc: ['body', 'prompt'],
    });
    expect(emulator.stats().billing.unbilled.content_policy).toBe(1);
  });
});

describe('model failures', () => {
  it('answers the model error (500 runner_server_error), not billed', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(
      { ...FIXED, generation: { queue_seconds: [0, 0], failure_rate: 1 } },
      clock,
    );
    const queued = await submit(emulator, { prompt: 'x' });
    clock.advance(10_000);
    const result = await fal(emulator.url, queued.response_url);
    expect([result.status, result.json, result.headers['x-fal-error-type']]).toEqual([
      500,
      { detail: 'Internal server error', error_type: 'runner_server_error' },
      'runner_server_error',
    ]);
    expect(emulator.stats().billing).toMatchObject({ billed_requests: 0, unbilled: { model_error: 1 } });
  });
});

describe('downloads and images', () => {
  it('truncates downloads by rate, and counts only whole downloads', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...FIXED, faults: { truncate_download_rate: 1 } }, clock);
    const queued = await submit(emulator, { prompt: 'x', image_size: 'square' });
    clock.advance(10_000);
    const { images } = (await fal(emulator.url, queued.response_url)).json;
    await expect(fetch(images[0].url).then((r) => r.arrayBuffer())).rejects.toThrow();
    expect(emulator.stats().faults.truncated_download).toBe(1);
    expect(emulator.stats().retention.images_downloaded).toBe(0);
  });

  it('throttles downloads to slow_download_kbps on the emulator clock', async () => {
    const clock = new ManualClock();
    const emulator = await startFal({ ...FIXED, faults: { slow_download_kbps: 8 } }, clock);
    const queued = await submit(emulator, { prompt: 'slow', image_size: 'square' });
    clock.advance(10_000);
    const { images } = (await fal(emulator.url, queued.response_url)).json;
    const response = await fetch(images[0].url);
    const total = Number(response.headers.get('content-length'));
    expect(total).toBeGreaterThan(1000);
    const reader = response.body!.getReader();
    clock.advance(1_000);
    let received = 0;
    while (received < 1000) received += (await reader.read()).value!.byteLength;
    // 8 kbps is 1,000 bytes a second: exactly that much came in one second of emulator time.
    expect(received).toBe(1000);
    clock.advance(1_000_000);
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      received += chunk.value.byteLength;
    expect(received).toBe(total);
  });

  it('serves blank, corrupt, wrongly sized and wrongly typed images by rate', async () => {
    const clock = new ManualClock();
    const fetchImage = async (faults: Record<string, number>) => {
      const emulator = await startFal({ ...FIXED, faults }, clock);
      const queued = await submit(emulator, { prompt: 'fault', image_size: { width: 320, height: 200 } });
      clock.advance(10_000);
      const { images } = (await fal(emulator.url, queued.response_url)).json;
      expect(images[0]).toMatchObject({ width: 320, height: 200, content_type: 'image/jpeg' });
      const response = await fetch(images[0].url);
      return {
        bytes: Buffer.from(await response.arrayBuffer()),
        type: response.headers.get('content-type'),
        emulator,
      };
    };
    const blank = await fetchImage({ blank_image_rate: 1 });
    expect((await sharp(blank.bytes).stats()).channels.every((c) => c.max - c.min <= 2)).toBe(true);
    expect(blank.emulator.stats().faults.blank_image).toBe(1);
    const corrupt = await fetchImage({ corrupt_image_rate: 1 });
    await expect(sharp(corrupt.bytes, { failOn: 'truncated' }).raw().toBuffer()).rejects.toThrow();
    const wrongSize = await fetchImage({ wrong_size_image_rate: 1 });
    expect(await sharp(wrongSize.bytes).metadata()).toMatchObject({ width: 200, height: 320 });
    const wrongFormat = await fetchImage({ wrong_format_image_rate: 1 });
    expect(wrongFormat.type).toBe('image/jpeg');
    expect((await sharp(wrongFormat.bytes).metadata()).format).toBe('png');
  });
});

describe('lost submit responses', () => {
  it('creates the request, then drops the connection before answering', async () => {
    const emulator = await startFal({ ...FIXED, faults: { lost_submit_response_rate: 1 } });
    await expect(fal(emulator.url, '/fal-ai/flux/dev', { body: { prompt: 'lost' } })).rejects.toThrow();
    expect((await truth(emulator)).map((l) => l.prompt)).toEqual(['lost']);
    expect(emulator.stats().faults.lost_submit_response).toBe(1);
  });
});
