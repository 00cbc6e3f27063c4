// POST /v1/{model} on the BFL emulator: auth by x-key (403), every model's own input schema with
// FastAPI's 422 shape, the answer {id, polling_url, cost, input_mp, output_mp} with costs per
// model, polling_url on polling_host, the webhook answer, and the routes' 404/405.
import { describe, expect, it } from 'vitest';
import { BFL_MODELS } from '../emulator/bfl/index.js';
import { bfl, DEMO_BFL_KEY, poll, startTestBfl, submit } from './support/emulator-bfl.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('auth', () => {
  it('answers 403 Not authenticated without x-key, and 403 Invalid Authentication for an unknown or disabled key', async () => {
    const emulator = await startTestBfl({
      accounts: [
        {
          id: 'acct',
          keys: [
            { key: 'good', status: 'active' },
            { key: 'off', status: 'disabled' },
          ],
        },
      ],
    });
    const body = { prompt: 'a fox' };
    const missing = await bfl(emulator.url, '/v1/flux-pro-1.1', { body });
    expect([missing.status, missing.json]).toEqual([403, { detail: 'Not authenticated' }]);
    const empty = await bfl(emulator.url, '/v1/flux-pro-1.1', { body, key: '' });
    expect(empty.status).toBe(403);
    for (const key of ['wrong', 'off', 'Good']) {
      const refused = await bfl(emulator.url, '/v1/flux-pro-1.1', { body, key });
      expect([refused.status, refused.json]).toEqual([
        403,
        { detail: 'Not authenticated - Invalid Authentication' },
      ]);
    }
    // A bearer token is not BFL's auth, even with a valid key.
    const bearer = await bfl(emulator.url, '/v1/flux-pro-1.1', {
      body,
      headers: { authorization: 'Bearer good' },
    });
    expect(bearer.status).toBe(403);
    expect((await bfl(emulator.url, '/v1/flux-pro-1.1', { body, key: 'good' })).status).toBe(200);
    // Auth comes before validation: a bad body without a key is still a 403.
    expect((await bfl(emulator.url, '/v1/flux-pro-1.1', { body: { width: 7 } })).status).toBe(403);
    expect(emulator.stats().requests['POST /v1/{model}']).toEqual({ '200': 1, '403': 7 });
  });
});

describe('the answer', () => {
  it('gives a UUID, a polling_url on the emulator, and the cost of each model', async () => {
    const emulator = await startTestBfl();
    const expected: Record<string, { cost: number; output_mp: number }> = {
      'flux-pro-1.1': { cost: 4, output_mp: 0.75 },
      'flux-pro-1.1-ultra': { cost: 6, output_mp: 3.98 },
      'flux-dev': { cost: 2.5, output_mp: 0.75 },
      'flux-kontext-pro': { cost: 4, output_mp: 1 },
      'flux-kontext-max': { cost: 8, output_mp: 1 },
      'flux-2-pro': { cost: 3, output_mp: 1 },
      'flux-2-max': { cost: 7, output_mp: 1 },
      'flux-2-flex': { cost: 5, output_mp: 1 },
      'flux-2-klein-4b': { cost: 1.4, output_mp: 1 },
      'flux-2-klein-9b': { cost: 1.5, output_mp: 1 },
    };
    expect(Object.keys(expected).sort()).toEqual([...BFL_MODELS].sort());
    const ids = new Set<string>();
    for (const model of BFL_MODELS) {
      const answer = await submit(emulator, model, { prompt: `a ${model} lighthouse` });
      expect(answer.id).toMatch(UUID);
      expect(answer).toEqual({
        id: answer.id,
        polling_url: `${emulator.url}/v1/get_result?id=${answer.id}`,
        cost: expected[model]!.cost,
        input_mp: 0,
        output_mp: expected[model]!.output_mp,
      });
      ids.add(answer.id);
    }
    expect(ids.size).toBe(BFL_MODELS.length);
  });

  it('prices FLUX.2 by started megapixel and input image, and follows a configured cost', async () => {
    const emulator = await startTestBfl({ models: { 'flux-pro-1.1': { cost: 5.5 } } });
    // 1440 x 1440 is 1.98 MP: 3 + 1 x 1.5 (the answer seen from api.bfl.ai for this size).
    expect(await submit(emulator, 'flux-2-pro', { prompt: 'p', width: 1440, height: 1440 })).toMatchObject({
      cost: 4.5,
      output_mp: 1.98,
    });
    expect(await submit(emulator, 'flux-2-pro', { prompt: 'p', width: 2048, height: 2048 })).toMatchObject({
      cost: 7.5,
      output_mp: 4,
    });
    expect(
      await submit(emulator, 'flux-2-pro', {
        prompt: 'p',
        input_image: 'https://example.test/a.png',
        input_image_2: 'aGk=',
      }),
    ).toMatchObject({ cost: 6, input_mp: 2, output_mp: 1 });
    expect(await submit(emulator, 'flux-pro-1.1', { prompt: 'p' })).toMatchObject({ cost: 5.5 });
  });

  it('writes polling_url on polling_host, so only a client that polls the URL it was given finds the task', async () => {
    const emulator = await startTestBfl({ polling_host: 'localhost' });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'a regional fox' });
    const port = new URL(emulator.url).port;
    expect(answer.polling_url).toBe(`http://localhost:${port}/v1/get_result?id=${answer.id}`);
    expect(emulator.url.startsWith('http://127.0.0.1:')).toBe(true);
    expect(emulator.pollingBaseUrl).toBe(`http://localhost:${port}`);
    const polled = await poll(answer.polling_url);
    expect(polled.json).toMatchObject({ id: answer.id, status: 'Pending' });
    // A URL built from the submit's base reaches another "cluster", which does not know the task.
    const madeUp = await poll(`${emulator.url}/v1/get_result?id=${answer.id}`);
    expect([madeUp.status, madeUp.json.status]).toEqual([200, 'Task not found']);
    expect(emulator.stats().polls_on_other_host).toBe(1);
    const lenient = await startTestBfl({ polling_host: 'localhost', polling_host_only: false });
    const other = await submit(lenient, 'flux-pro-1.1', { prompt: 'p' });
    expect((await poll(`${lenient.url}/v1/get_result?id=${other.id}`)).json.status).toBe('Pending');
  });

  it('answers a request with webhook_url with AsyncWebhookResponse (no polling_url), or AsyncResponse by the knob', async () => {
    const body = { prompt: 'hooked', webhook_url: 'http://127.0.0.1:9/hook', webhook_secret: 's3cret' };
    const documented = await startTestBfl();
    const answer = await bfl(documented.url, '/v1/flux-pro-1.1', { key: DEMO_BFL_KEY, body });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      id: expect.stringMatching(UUID),
      status: 'Pending',
      webhook_url: 'http://127.0.0.1:9/hook',
      cost: 4,
      input_mp: 0,
      output_mp: 0.75,
    });
    expect(answer.text).not.toContain('s3cret');
    const knob = await startTestBfl({ webhooks: { submit_answer: 'async_response' } });
    const withPolling = await submit(knob, 'flux-pro-1.1', body);
    expect(withPolling.polling_url).toBe(`${knob.url}/v1/get_result?id=${withPolling.id}`);
  });
});

describe('validation (422, FastAPI and pydantic words)', () => {
  it('reports every bad field of FLUX1.1 [pro] in model order, each with its first problem', async () => {
    const emulator = await startTestBfl();
    const response = await bfl(emulator.url, '/v1/flux-pro-1.1', {
      key: DEMO_BFL_KEY,
      body: {
        prompt: 42,
        width: 1000,
        height: 1472,
        prompt_upsampling: 'maybe',
        seed: 1.5,
        safety_tolerance: 7,
        output_format: 'gif',
        webhook_url: 'ftp://hooks.test/x',
        webhook_secret: 99,
      },
    });
    expect(response.status).toBe(422);
    expect(response.json).toEqual({
      detail: [
        { type: 'string_type', loc: ['body', 'prompt'], msg: 'Input should be a valid string', input: 42 },
        {
          type: 'multiple_of',
          loc: ['body', 'width'],
          msg: 'Input should be a multiple of 32',
          input: 1000,
          ctx: { multiple_of: 32 },
        },
        {
          type: 'less_than_equal',
          loc: ['body', 'height'],
          msg: 'Input should be less than or equal to 1440',
          input: 1472,
          ctx: { le: 1440 },
        },
        {
          type: 'bool_parsing',
          loc: ['body', 'prompt_upsampling'],
          msg: 'Input should be a valid boolean, unable to interpret input',
          input: 'maybe',
        },
        {
          type: 'int_from_float',
          loc: ['body', 'seed'],
          msg: 'Input should be a valid integer, got a number with a fractional part',
          input: 1.5,
        },
        {
          type: 'less_than_equal',
          loc: ['body', 'safety_tolerance'],
          msg: 'Input should be less than or equal to 6',
          input: 7,
          ctx: { le: 6 },
        },
        {
          type: 'enum',
          loc: ['body', 'output_format'],
          msg: "Input should be 'jpeg', 'png' or 'webp'",
          input: 'gif',
          ctx: { expected: "'jpeg', 'png' or 'webp'" },
        },
        {
          type: 'url_scheme',
          loc: ['body', 'webhook_url'],
          msg: "URL scheme should be 'http' or 'https'",
          input: 'ftp://hooks.test/x',
          ctx: { expected_schemes: "'http' or 'https'" },
        },
        // The secret is not echoed back.
        { type: 'string_type', loc: ['body', 'webhook_secret'], msg: 'Input should be a valid string' },
      ],
    });
    expect(emulator.stats().tasks_total).toBe(0);
  });

  it('takes what pydantic lax mode takes: numeric strings, whole floats, "yes", nulls where nullable', async () => {
    const emulator = await startTestBfl();
    await submit(emulator, 'flux-pro-1.1', {
      prompt: null,
      width: '512',
      height: 768.0,
      prompt_upsampling: 'yes',
      seed: null,
      output_format: null,
      webhook_url: null,
    });
    const small = await bfl(emulator.url, '/v1/flux-pro-1.1', {
      key: DEMO_BFL_KEY,
      body: { width: 224, height: 'tall' },
    });
    expect(small.json.detail).toEqual([
      {
        type: 'greater_than_equal',
        loc: ['body', 'width'],
        msg: 'Input should be greater than or equal to 256',
        input: 224,
        ctx: { ge: 256 },
      },
      {
        type: 'int_parsing',
        loc: ['body', 'height'],
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: 'tall',
      },
    ]);
  });

  it('requires prompt where the model does (Kontext, FLUX.2) and not where it has a default', async () => {
    const emulator = await startTestBfl();
    for (const model of ['flux-kontext-pro', 'flux-2-pro', 'flux-2-flex', 'flux-2-klein-4b']) {
      const response = await bfl(emulator.url, `/v1/${model}`, { key: DEMO_BFL_KEY, body: { seed: 3 } });
      expect([model, response.status, response.json.detail]).toEqual([
        model,
        422,
        [{ type: 'missing', loc: ['body', 'prompt'], msg: 'Field required', input: { seed: 3 } }],
      ]);
    }
    for (const model of ['flux-pro-1.1', 'flux-dev', 'flux-pro-1.1-ultra']) await submit(emulator, model, {});
  });

  it('checks each model its own fields: dev steps and guidance, ultra and Kontext aspect ratios, FLUX.2 sizes', async () => {
    const emulator = await startTestBfl();
    const detail = async (model: string, body: object) =>
      (await bfl(emulator.url, `/v1/${model}`, { key: DEMO_BFL_KEY, body })).json.detail as {
        loc: unknown[];
        type: string;
      }[];
    expect((await detail('flux-dev', { steps: 51, guidance: 1 })).map((d) => [d.loc[1], d.type])).toEqual([
      ['steps', 'less_than_equal'],
      ['guidance', 'greater_than_equal'],
    ]);
    const ratio = await detail('flux-pro-1.1-ultra', { aspect_ratio: '3:1', image_prompt_strength: 2 });
    expect(ratio[0]).toEqual({
      type: 'value_error',
      loc: ['body', 'aspect_ratio'],
      msg: 'Value error, Aspect ratio must be between 21:9 and 9:21',
      input: '3:1',
      ctx: { error: 'Aspect ratio must be between 21:9 and 9:21' },
    });
    expect(ratio[1]).toMatchObject({ loc: ['body', 'image_prompt_strength'], type: 'less_than_equal' });
    expect((await detail('flux-kontext-pro', { prompt: 'p', aspect_ratio: '1:3' }))[0]?.type).toBe(
      'value_error',
    );
    expect(await submit(emulator, 'flux-kontext-pro', { prompt: 'p', aspect_ratio: '21:9' })).toBeTruthy();
    // FLUX.2: at least 64 a side, safety_tolerance at most 5 (FLUX.1: 6), and at most 4 MP.
    expect(
      (await detail('flux-2-pro', { prompt: 'p', width: 32, safety_tolerance: 6 })).map((d) => d.type),
    ).toEqual(['greater_than_equal', 'less_than_equal']);
    const big = await bfl(emulator.url, '/v1/flux-2-pro', {
      key: DEMO_BFL_KEY,
      body: { prompt: 'p', width: 2560, height: 2048 },
    });
    expect(big.status).toBe(422);
    expect(big.json.detail[0]).toMatchObject({ type: 'value_error', loc: ['body'] });
    // Sides are rounded down to a multiple of 16.
    expect(await submit(emulator, 'flux-2-pro', { prompt: 'p', width: 1030, height: 1030 })).toMatchObject({
      output_mp: 1,
    });
  });

  it('refuses a webhook_url that is not an RFC 3986 http(s) URL, non-ASCII hosts included', async () => {
    const emulator = await startTestBfl();
    const cases: [unknown, string][] = [
      ['https://Ï', 'url_parsing'],
      ['https://hooks.test/caf\u00e9', 'url_parsing'],
      ['not a url', 'url_parsing'],
      ['', 'url_parsing'],
      ['mailto:x@y.test', 'url_scheme'],
      [`https://hooks.test/${'a'.repeat(2100)}`, 'url_too_long'],
      [12, 'url_type'],
    ];
    for (const [webhook_url, type] of cases) {
      const response = await bfl(emulator.url, '/v1/flux-pro-1.1', {
        key: DEMO_BFL_KEY,
        body: { webhook_url },
      });
      expect([webhook_url, response.status, response.json.detail[0].type]).toEqual([webhook_url, 422, type]);
    }
    await submit(emulator, 'flux-pro-1.1', { webhook_url: 'https://hooks.test:8443/bfl?x=1' });
  });

  it('answers a body that is not a JSON object as FastAPI does', async () => {
    const emulator = await startTestBfl();
    const send = (body: string) =>
      bfl(emulator.url, '/v1/flux-2-pro', {
        key: DEMO_BFL_KEY,
        body,
        headers: { 'content-type': 'application/json' },
      });
    const notJson = await send('{"prompt": ');
    expect([notJson.status, notJson.json.detail[0].type, notJson.json.detail[0].loc[0]]).toEqual([
      422,
      'json_invalid',
      'body',
    ]);
    const empty = await bfl(emulator.url, '/v1/flux-2-pro', { key: DEMO_BFL_KEY, method: 'POST' });
    expect(empty.json).toEqual({
      detail: [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }],
    });
    const list = await send('["prompt"]');
    expect(list.json.detail).toEqual([
      {
        type: 'model_attributes_type',
        loc: ['body'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: ['prompt'],
      },
    ]);
  });

  it('ignores unknown fields as pydantic does, or refuses them with generation.extra_fields: forbid', async () => {
    const lax = await startTestBfl();
    await submit(lax, 'flux-2-pro', { prompt: 'p', aspect_ratio: '16:9', n: 2 });
    const strict = await startTestBfl({ generation: { extra_fields: 'forbid' } });
    const response = await bfl(strict.url, '/v1/flux-2-pro', {
      key: DEMO_BFL_KEY,
      body: { prompt: 'p', n: 2 },
    });
    expect(response.json.detail).toEqual([
      { type: 'extra_forbidden', loc: ['body', 'n'], msg: 'Extra inputs are not permitted', input: 2 },
    ]);
  });
});

describe('routes', () => {
  it('answers 404 for an unknown or disabled model, 405 for a wrong method, as FastAPI words them', async () => {
    const emulator = await startTestBfl({ models: { 'flux-dev': { enabled: false } } });
    for (const path of ['/v1/flux-pro-9', '/v1/flux-dev', '/v2/flux-pro-1.1', '/']) {
      const response = await bfl(emulator.url, path, { key: DEMO_BFL_KEY, body: { prompt: 'p' } });
      expect([path, response.status, response.json]).toEqual([path, 404, { detail: 'Not Found' }]);
    }
    const get = await bfl(emulator.url, '/v1/flux-pro-1.1', { key: DEMO_BFL_KEY });
    expect([get.status, get.json, get.headers.allow]).toEqual([
      405,
      { detail: 'Method Not Allowed' },
      'POST',
    ]);
    const post = await bfl(emulator.url, '/v1/get_result?id=x', { body: {} });
    expect([post.status, post.headers.allow]).toEqual([405, 'GET']);
    expect(emulator.stats().requests).toMatchObject({
      'POST (unmatched)': { '404': 4 },
      'GET /v1/{model}': { '405': 1 },
      'POST /v1/get_result': { '405': 1 },
    });
  });
});
