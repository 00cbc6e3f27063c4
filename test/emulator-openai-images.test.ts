// The OpenAI emulator's synchronous Images API: the answer's shape and images, the call held for
// its generation time on a manual clock (and a client leaving meanwhile), each parameter checked
// with its 400 and `param`, moderation, the failure rate, and the per-minute limits with their
// headers and 429s.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { api, fixed, ManualClock, startTestOpenAI } from './emulator-openai-harness.js';
import type { OpenAIConfigOverrides } from '../emulator/openai/index.js';

async function setup(config: OpenAIConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestOpenAI(fixed(config), { clock });
  return { clock, emulator };
}

const generate = (emulator: { url: string }, body: Record<string, unknown>) =>
  api(emulator, '/v1/images/generations', { body: { model: 'gpt-image-1', prompt: 'a lamp', ...body } });

/** Resolves once the emulator holds a call (its timer is set), without sleeping. */
async function held(clock: ManualClock): Promise<void> {
  for (let i = 0; i < 1000 && clock.pendingTimes().length === 0; i++)
    await new Promise((r) => setImmediate(r));
  expect(clock.pendingTimes().length).toBeGreaterThan(0);
}

describe('POST /v1/images/generations', () => {
  it('holds the call for its generation time, then answers the images as base64 with usage', async () => {
    const { clock, emulator } = await setup();
    let answered = false;
    const pending = generate(emulator, {
      n: 2,
      size: '1536x1024',
      quality: 'high',
      output_format: 'jpeg',
    }).then((r) => {
      answered = true;
      return r;
    });
    await held(clock);
    expect(clock.pendingTimes()[0]! - clock.now()).toBe(30_000);
    clock.advance(29_999);
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    clock.advance(1);
    const response = await pending;
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({
      created: Math.floor(clock.now() / 1000),
      background: 'opaque',
      output_format: 'jpeg',
      quality: 'high',
      size: '1536x1024',
      usage: { output_tokens: 2 * 6208, input_tokens_details: { image_tokens: 0 } },
    });
    expect(response.json.data).toHaveLength(2);
    for (const { b64_json } of response.json.data)
      expect(await sharp(Buffer.from(b64_json, 'base64')).metadata()).toMatchObject({
        format: 'jpeg',
        width: 1536,
        height: 1024,
      });
    expect(response.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it('resolves auto size and quality as the square image at medium quality', async () => {
    const { emulator } = await setup({ images: { generation_seconds: [0, 0] } });
    const response = await generate(emulator, { size: 'auto', quality: 'auto' });
    expect(response.json).toMatchObject({ size: '1024x1024', quality: 'medium', output_format: 'png' });
  });

  it('cancels its timer when the client goes away', async () => {
    const { clock, emulator } = await setup();
    const controller = new AbortController();
    const { request } = await import('undici');
    const call = request(`${emulator.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-openai-demo-key', 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'a lamp' }),
      signal: controller.signal,
    }).catch(() => 'aborted');
    await held(clock);
    controller.abort();
    expect(await call).toBe('aborted');
    for (let i = 0; i < 1000 && clock.pendingTimes().length > 0; i++)
      await new Promise((r) => setImmediate(r));
    expect(clock.pendingTimes()).toEqual([]);
  });

  it('checks each parameter: 400 invalid_request_error naming it', async () => {
    const { emulator } = await setup({ images: { generation_seconds: [0, 0] } });
    const cases: [Record<string, unknown>, string, string][] = [
      [{ prompt: undefined }, 'prompt', 'missing_required_parameter'],
      [{ prompt: '' }, 'prompt', 'empty_string'],
      [{ prompt: 3 }, 'prompt', 'invalid_type'],
      [{ n: 0 }, 'n', 'integer_below_min_value'],
      [{ n: 11 }, 'n', 'integer_above_max_value'],
      [{ n: 1.5 }, 'n', 'invalid_type'],
      [{ size: '512x512' }, 'size', 'invalid_value'],
      [{ quality: 'hd' }, 'quality', 'invalid_value'],
      [{ output_format: 'gif' }, 'output_format', 'invalid_value'],
      [{ background: 'green' }, 'background', 'invalid_value'],
      [{ moderation: 'off' }, 'moderation', 'invalid_value'],
      [{ output_compression: 101 }, 'output_compression', 'integer_above_max_value'],
      [{ output_compression: 50 }, 'output_compression', 'invalid_value'],
      [{ output_format: 'jpeg', background: 'transparent' }, 'background', 'invalid_value'],
      [{ model: 'dall-e-9' }, 'model', 'invalid_value'],
      [{ response_format: 'url' }, 'response_format', 'unknown_parameter'],
    ];
    for (const [body, param, code] of cases) {
      const response = await generate(emulator, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.json.error, JSON.stringify(body)).toMatchObject({
        type: 'invalid_request_error',
        param,
        code,
      });
    }
    const notJson = await api(emulator, '/v1/images/generations', { body: '{nope' });
    expect(notJson.status).toBe(400);
  });

  it('refuses a prompt with a moderation word (400 moderation_blocked), and fails at images.failure_rate', async () => {
    const { emulator } = await setup({ images: { generation_seconds: [0, 0] } });
    const blocked = await generate(emulator, { prompt: 'something FORBIDDEN' });
    expect(blocked.status).toBe(400);
    expect(blocked.json.error).toMatchObject({
      type: 'image_generation_user_error',
      code: 'moderation_blocked',
    });
    emulator.setKnobs({ images: { failure_rate: 1 } });
    const failed = await generate(emulator, {});
    expect(failed.status).toBe(500);
    expect(failed.json.error.type).toBe('server_error');
  });
});

describe('per-minute limits', () => {
  it('takes n images a call against images_per_minute, answering 429 with the rate-limit headers', async () => {
    const { clock, emulator } = await setup({
      images: { generation_seconds: [0, 0] },
      limits: { images_per_minute: 5 },
    });
    const first = await generate(emulator, { n: 3 });
    expect(first.status).toBe(200);
    expect(first.headers).toMatchObject({
      'x-ratelimit-limit-images': '5',
      'x-ratelimit-remaining-images': '2',
      'x-ratelimit-reset-images': '36s',
    });
    const refused = await generate(emulator, { n: 3 });
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'images', param: null });
    expect(refused.json.error.message).toMatch(/images per min \(IPM\): Limit 5/);
    expect(refused.headers['retry-after']).toBe('12');
    expect(refused.headers['x-ratelimit-remaining-images']).toBe('2');
    clock.advance(12_000);
    expect((await generate(emulator, { n: 3 })).status).toBe(200);
    expect(emulator.stats().faults.rate_limited_images).toBe(1);
  });

  it('limits requests per minute when requests_per_minute is set', async () => {
    const { clock, emulator } = await setup({
      images: { generation_seconds: [0, 0] },
      limits: { images_per_minute: 100, requests_per_minute: 2, retry_after: false },
    });
    expect((await generate(emulator, {})).headers['x-ratelimit-remaining-requests']).toBe('1');
    expect((await generate(emulator, {})).status).toBe(200);
    const refused = await generate(emulator, {});
    expect(refused.status).toBe(429);
    expect(refused.json.error.type).toBe('requests');
    expect(refused.headers['retry-after']).toBeUndefined();
    expect(refused.headers['x-ratelimit-limit-requests']).toBe('2');
    clock.advance(30_000);
    expect((await generate(emulator, {})).status).toBe(200);
  });
});
