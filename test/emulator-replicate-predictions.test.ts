// The Replicate emulator's prediction routes over real HTTP: create by model and by version (every
// version form), the prediction object through its statuses, output files of each format, one URL
// or a list, auth, not-found, wrong methods, input validation (422 invalid_fields), failures,
// moderation (the NSFW failure, and the safety checker switched off), the 30-minute timeout and
// stuck predictions. Time is a manual clock: queue 2 s, run 3 s unless a test says otherwise.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  api,
  create,
  getPrediction,
  ManualClock,
  SCHNELL,
  SDXL_VERSION,
  startReplicate,
  T0,
  TOKEN,
} from './emulator-replicate-helpers.js';

const timing = { generation: { queue_seconds: 2, run_seconds: 3 } };

async function started(config: object = {}) {
  const clock = new ManualClock(T0);
  const emulator = await startReplicate({ ...timing, ...config }, { clock });
  return { clock, emulator };
}

describe('create and get', () => {
  it('walks a prediction through starting, processing and succeeded, with every field of the object', async () => {
    const { clock, emulator } = await started();
    const created = await create(emulator, {
      input: { prompt: 'a red fox', num_outputs: 2, aspect_ratio: '16:9' },
    });
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-z]{26}$/),
      model: 'black-forest-labs/flux-schnell',
      version: 'hidden',
      input: { prompt: 'a red fox', num_outputs: 2, aspect_ratio: '16:9' },
      logs: '',
      output: null,
      data_removed: false,
      error: null,
      status: 'starting',
      source: 'api',
      created_at: '2026-01-01T00:00:00.000Z',
      started_at: null,
      completed_at: null,
      urls: {
        cancel: `${emulator.url}/v1/predictions/${created.id}/cancel`,
        get: `${emulator.url}/v1/predictions/${created.id}`,
        web: `${emulator.url}/p/${created.id}`,
      },
    });

    clock.advance(2_000);
    const processing = await getPrediction(emulator, created.id);
    expect(processing).toMatchObject({
      status: 'processing',
      started_at: '2026-01-01T00:00:02.000Z',
      output: null,
    });
    expect(processing.logs).toMatch(/^Using seed: \d+\n$/);
    expect(processing.metrics).toBeUndefined();

    clock.advance(3_000);
    const done = await getPrediction(emulator, created.id);
    expect(done).toMatchObject({
      status: 'succeeded',
      completed_at: '2026-01-01T00:00:05.000Z',
      error: null,
      metrics: { predict_time: 3, total_time: 5 },
    });
    expect(done.output).toEqual([
      expect.stringMatching(new RegExp(`^${emulator.deliveryUrl}/xezq/[A-Za-z0-9]{45}/out-0\\.webp$`)),
      expect.stringMatching(/\/out-1\.webp$/),
    ]);
    const file = await fetch(done.output[1]);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/webp');
    const meta = await sharp(Buffer.from(await file.arrayBuffer())).metadata();
    expect(meta).toMatchObject({ format: 'webp', width: 1344, height: 768 });
  });

  it('answers 201 with Location at the prediction', async () => {
    const { emulator } = await started();
    const response = await api(emulator, SCHNELL, { method: 'POST', body: { input: { prompt: 'p' } } });
    expect(response.status).toBe(201);
    expect(response.headers.location).toBe(`${emulator.url}/v1/predictions/${response.json.id}`);
  });

  it('runs a version by its id, by owner/name:id, and an official model by owner/name', async () => {
    const { emulator } = await started();
    const byId = await create(
      emulator,
      { version: SDXL_VERSION, input: { num_outputs: 1 } },
      { path: '/v1/predictions' },
    );
    expect(byId).toMatchObject({ model: 'stability-ai/sdxl', version: SDXL_VERSION, status: 'starting' });
    const byName = await create(
      emulator,
      { version: `stability-ai/sdxl:${SDXL_VERSION}`, input: {} },
      { path: '/v1/predictions' },
    );
    expect(byName).toMatchObject({ model: 'stability-ai/sdxl', version: SDXL_VERSION });
    const official = await create(
      emulator,
      { version: 'black-forest-labs/flux-1.1-pro', input: { prompt: 'p' } },
      { path: '/v1/predictions' },
    );
    expect(official).toMatchObject({ model: 'black-forest-labs/flux-1.1-pro', version: 'hidden' });
  });

  it('refuses unknown versions, a community model by bare name, and a community model on the model route', async () => {
    const { emulator } = await started();
    const invalid = {
      title: 'Invalid version or not permitted',
      detail: "The specified version does not exist (or perhaps you don't have permission to use it?)",
      status: 422,
    };
    for (const version of [
      '0'.repeat(64),
      'stability-ai/sdxl',
      `black-forest-labs/flux-schnell:${SDXL_VERSION}`,
      'nope',
    ]) {
      const response = await api(emulator, '/v1/predictions', {
        method: 'POST',
        body: { version, input: {} },
      });
      expect([response.status, response.json], version).toEqual([422, invalid]);
    }
    const response = await api(emulator, '/v1/models/stability-ai/sdxl/predictions', {
      method: 'POST',
      body: { input: {} },
    });
    expect([response.status, response.json]).toEqual([
      404,
      { detail: 'The requested resource could not be found.', status: 404 },
    ]);
  });

  it('puts one URL in output for a single-output model, and serves jpg and png as asked', async () => {
    const { clock, emulator } = await started();
    const pro = await create(
      emulator,
      { input: { prompt: 'p', aspect_ratio: 'custom', width: 1000, height: 600, output_format: 'jpg' } },
      { path: '/v1/models/black-forest-labs/flux-1.1-pro/predictions' },
    );
    const png = await create(emulator, { input: { prompt: 'q', output_format: 'png' } });
    clock.advance(5_000);
    const single = await getPrediction(emulator, pro.id);
    expect(single.output).toMatch(/\/output\.jpg$/);
    const jpg = await fetch(single.output);
    expect(jpg.headers.get('content-type')).toBe('image/jpeg');
    expect(await sharp(Buffer.from(await jpg.arrayBuffer())).metadata()).toMatchObject({
      format: 'jpeg',
      width: 1008,
      height: 608,
    });
    const list = await getPrediction(emulator, png.id);
    const file = await fetch(list.output[0]);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect((await sharp(Buffer.from(await file.arrayBuffer())).metadata()).format).toBe('png');
    // The same file again is the same bytes (clients check downloads by hash).
    const again = await fetch(list.output[0]);
    expect(
      Buffer.from(await again.arrayBuffer()).equals(
        Buffer.from(await (await fetch(list.output[0])).arrayBuffer()),
      ),
    ).toBe(true);
  });

  it('serves no file for a made-up key or an index past the outputs', async () => {
    const { clock, emulator } = await started();
    const created = await create(emulator);
    clock.advance(5_000);
    const url: string = (await getPrediction(emulator, created.id)).output[0];
    expect((await fetch(url)).status).toBe(200);
    expect((await fetch(url.replace(/xezq\/[^/]+/, 'xezq/AAAA'))).status).toBe(404);
    expect((await fetch(url.replace('out-0', 'out-1'))).status).toBe(404);
    expect((await fetch(url.replace('out-0.webp', 'output.webp'))).status).toBe(404);
  });
});

describe('auth, not found and methods', () => {
  it('answers 401 with the API body for a missing token and for a wrong one', async () => {
    const { emulator } = await started();
    for (const path of [SCHNELL, '/v1/predictions', '/v1/predictions/abc', '/v1/webhooks/default/secret']) {
      const method = path === SCHNELL ? 'POST' : 'GET';
      const none = await api(emulator, path, {
        method,
        token: null,
        body: method === 'POST' ? {} : undefined,
      });
      expect([none.status, none.json], path).toEqual([
        401,
        { title: 'Unauthenticated', detail: 'You did not pass an authentication token', status: 401 },
      ]);
      const wrong = await api(emulator, path, { method, token: 'r8_wrong' });
      expect([wrong.status, wrong.json], path).toEqual([
        401,
        { title: 'Unauthenticated', detail: 'You did not pass a valid authentication token', status: 401 },
      ]);
    }
    const scheme = await api(emulator, '/v1/predictions', {
      token: null,
      headers: { authorization: `Basic ${TOKEN}` },
    });
    expect(scheme.status).toBe(401);
    const legacy = await api(emulator, '/v1/predictions', {
      token: null,
      headers: { authorization: `Token ${TOKEN}` },
    });
    expect(legacy.status).toBe(200);
  });

  it('hides another account’s predictions, and answers 404 for unknown ones', async () => {
    const other = {
      username: 'other',
      tokens: ['r8_other'],
      webhook_secret: 'whsec_b3RoZXI=',
      credit_usd: 10,
    };
    const { emulator } = await started({
      accounts: [
        { username: 'demo', tokens: [TOKEN], webhook_secret: 'whsec_ZGVtbw==', credit_usd: 10 },
        other,
      ],
    });
    const mine = await create(emulator);
    for (const path of [`/v1/predictions/${mine.id}`, '/v1/predictions/doesnotexist']) {
      const response = await api(emulator, path, { token: 'r8_other' });
      expect([response.status, response.json]).toEqual([
        404,
        { detail: 'The requested resource could not be found.', status: 404 },
      ]);
    }
    const cancel = await api(emulator, `/v1/predictions/${mine.id}/cancel`, {
      method: 'POST',
      token: 'r8_other',
    });
    expect(cancel.status).toBe(404);
    expect((await getPrediction(emulator, mine.id)).status).toBe('starting');
  });

  it('answers 405 with Allow for a wrong method and 404 for unknown paths', async () => {
    const { emulator } = await started();
    const put = await api(emulator, '/v1/predictions', { method: 'PUT', body: {} });
    expect([put.status, put.headers.allow, put.json.detail]).toEqual([
      405,
      'POST, GET',
      'Method "PUT" not allowed.',
    ]);
    const get = await api(emulator, '/v1/predictions/abc/cancel');
    expect([get.status, get.headers.allow]).toEqual([405, 'POST']);
    expect((await api(emulator, '/v1/nothing')).status).toBe(404);
    const stats = emulator.stats().requests;
    expect(stats['PUT /v1/predictions']).toEqual({ '405': 1 });
    expect(stats['GET /v1/predictions/{id}/cancel']).toEqual({ '405': 1 });
  });
});

describe('validation', () => {
  it('lists every top-level problem of the body in invalid_fields', async () => {
    const { emulator } = await started();
    const response = await api(emulator, '/v1/predictions', {
      method: 'POST',
      body: { inptu: {}, webhook: 'https://Ï', webhook_events_filter: ['start', 'finished'] },
    });
    expect(response.status).toBe(422);
    expect(response.json).toEqual({
      title: 'Input validation failed',
      status: 422,
      detail: expect.stringContaining('- (root): input is required\n'),
      invalid_fields: [
        { type: 'required', field: '', description: 'input is required' },
        { type: 'required', field: '', description: 'version is required' },
        {
          type: 'additional_property_not_allowed',
          field: '',
          description: 'Additional property inptu is not allowed',
        },
        { type: 'format', field: 'webhook', description: "Does not match format 'uri'" },
        {
          type: 'enum',
          field: 'webhook_events_filter.1',
          description:
            'webhook_events_filter.1 must be one of the following: "start", "output", "logs", "completed"',
        },
      ],
    });
  });

  it('checks the input against the model schema', async () => {
    const { emulator } = await started();
    const response = await api(emulator, SCHNELL, {
      method: 'POST',
      body: { input: { num_outputs: 5, aspect_ratio: '2:1', go_fast: 'yes' } },
    });
    expect(response.status).toBe(422);
    expect(response.json.invalid_fields).toEqual([
      { type: 'required', field: 'input', description: 'prompt is required' },
      {
        type: 'enum',
        field: 'input.aspect_ratio',
        description: expect.stringMatching(/^input\.aspect_ratio must be one of the following: "1:1", /),
      },
      { type: 'number_lte', field: 'input.num_outputs', description: 'Must be less than or equal to 4' },
      {
        type: 'invalid_type',
        field: 'input.go_fast',
        description: 'Invalid type. Expected: boolean, given: string',
      },
    ]);
    expect(response.json.detail).toContain('- input.num_outputs: Must be less than or equal to 4\n');
    expect(emulator.stats().predictions_total).toBe(0);
  });

  it('answers 400 for a body that is not JSON, and for a malformed Cancel-After', async () => {
    const { emulator } = await started();
    const broken = await api(emulator, SCHNELL, { method: 'POST', body: '{"input":' });
    expect([broken.status, broken.json.status]).toEqual([400, 400]);
    const notObject = await api(emulator, SCHNELL, { method: 'POST', body: '[1]' });
    expect(notObject.status).toBe(422);
    for (const value of ['soon', '4s']) {
      const response = await api(emulator, SCHNELL, {
        method: 'POST',
        body: { input: { prompt: 'p' } },
        headers: { 'cancel-after': value },
      });
      expect([response.status, response.json.detail], value).toEqual([
        400,
        expect.stringContaining('Cancel-After'),
      ]);
    }
    expect(emulator.stats().predictions_total).toBe(0);
  });
});

describe('failures', () => {
  it('fails a share of predictions with the model error (failure_rate)', async () => {
    const { clock, emulator } = await started({ generation: { ...timing.generation, failure_rate: 1 } });
    const created = await create(emulator);
    clock.advance(5_000);
    const failed = await getPrediction(emulator, created.id);
    expect(failed).toMatchObject({
      status: 'failed',
      output: null,
      error: 'Prediction failed: the model raised an error (emulated).',
      metrics: { predict_time: 3 },
    });
  });

  it('fails a prompt with a blocked word as the safety checker does, unless the input turns it off', async () => {
    const { clock, emulator } = await started({
      generation: { ...timing.generation, blocked_words: ['Forbidden'] },
    });
    const flagged = await create(emulator, { input: { prompt: 'something FORBIDDEN here' } });
    const allowed = await create(emulator, {
      input: { prompt: 'something forbidden here', disable_safety_checker: true },
    });
    clock.advance(5_000);
    expect(await getPrediction(emulator, flagged.id)).toMatchObject({
      status: 'failed',
      output: null,
      error: 'All generated images contained NSFW content. Try running it again with a different prompt.',
    });
    expect((await getPrediction(emulator, allowed.id)).status).toBe('succeeded');
  });

  it('stops a run after the timeout (30 minutes by default) as failed, "Prediction timed out"', async () => {
    const { clock, emulator } = await started({ generation: { queue_seconds: 1, run_seconds: 2000 } });
    const created = await create(emulator);
    clock.advance(1_000 + 1_799_999);
    expect((await getPrediction(emulator, created.id)).status).toBe('processing');
    clock.advance(1);
    expect(await getPrediction(emulator, created.id)).toMatchObject({
      status: 'failed',
      error: 'Prediction timed out',
      metrics: { predict_time: 1800 },
    });
  });

  it('keeps a stuck prediction processing forever', async () => {
    const { clock, emulator } = await started({ faults: { stuck_prediction_rate: 1 } });
    const created = await create(emulator);
    clock.advance(10 * 86_400_000);
    expect(await getPrediction(emulator, created.id)).toMatchObject({
      status: 'processing',
      completed_at: null,
    });
    expect(emulator.stats().predictions.processing).toBe(1);
  });
});
