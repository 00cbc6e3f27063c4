// POST /v1/images/generations on a real emulator: the acknowledgement envelope, every 400 rule
// (code and param), defaults, credits (reserved at submit, 402 when short) and error languages.
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../emulator/index.js';
import { LANGUAGES } from '../common/generation.js';
import type { ApiErrorCode } from '../emulator/apimart/errors.js';
import { call, expectCatalogueText, ManualClock, startTestEmulator } from './support/emulator.js';

const KEY = 'sk-live-demo';
const SUBMIT = '/v1/images/generations';
let emulator: RunningEmulator;

beforeAll(async () => {
  // The URLs below are checked for their form only (test/emulator-references.test.ts fetches).
  emulator = await startTestEmulator({
    rate_limits: { submit: { per_second: 10_000, burst: 10_000 } },
    reference_images: { fetch: false, timeout_ms: 1_000, max_bytes: 1_000 },
  });
});

const submit = (body: unknown, key: string | undefined = KEY) => call(emulator.url, SUBMIT, { key, body });
const getTask = (id: string) => call(emulator.url, `/v1/tasks/${id}`, { key: KEY });

describe('submit', () => {
  it('acknowledges with {code, data:[{status: submitted, task_id}]}', async () => {
    const response = await submit({ prompt: 'a red bicycle', size: '16:9', resolution: '2K', n: 2 });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json).toEqual({
      code: 200,
      data: [{ status: 'submitted', task_id: expect.stringMatching(/^task_[0-9A-HJKMNP-TV-Z]{26}$/) }],
    });
    const task = await getTask(response.json.data[0].task_id);
    expect(task.json.data).toMatchObject({ status: 'pending', credits_cost: 4 });
  });

  it('applies the defaults n=1, size 1:1, resolution 1K, and ignores unknown fields and nulls', async () => {
    const response = await submit({ prompt: 'x', size: null, n: null, surprise: { nested: true } });
    expect(response.status).toBe(200);
    const id: string = response.json.data[0].task_id;
    expect((await getTask(id)).json.data.credits_cost).toBe(1);
    const truth = (await call(emulator.url, '/_emulator/tasks')).text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(truth.find((t) => t.id === id)).toMatchObject({
      n: 1,
      size: '1:1',
      resolution: '1K',
      prompt: 'x',
    });
  });

  it('accepts every listed size, n up to max_n, 15 image_urls, and an http(s) webhook', async () => {
    for (const size of emulator.config.sizes) expect((await submit({ prompt: 'p', size })).status).toBe(200);
    const urls = Array.from({ length: 15 }, (_, i) => `https://example.test/ref-${i}.png`);
    const response = await submit({
      prompt: 'p',
      n: 4,
      image_urls: urls,
      webhook: 'http://127.0.0.1:9/hook',
      language: 'ja',
      model: 'gpt-image-2',
    });
    expect(response.status).toBe(200);
  });

  it('accepts URIs as RFC 3986 writes them: a punycode host, non-ASCII percent-encoded', async () => {
    // A clock that never moves: no task ends, so no webhook goes to these hosts (loopback only).
    const frozen = await startTestEmulator(
      { reference_images: { fetch: false, timeout_ms: 1_000, max_bytes: 1_000 } },
      { clock: new ManualClock() },
    );
    const webhooks = ['https://xn--gda/hook', 'http://127.0.0.1:9/caf%C3%A9', 'HTTP://[::1]:9/a?b=%C3%8F#c'];
    for (const webhook of webhooks) {
      const response = await call(frozen.url, SUBMIT, {
        key: KEY,
        body: { prompt: 'p', webhook, image_urls: ['https://xn--bcher-kva.example/caf%C3%A9.png'] },
      });
      expect(response.status, webhook).toBe(200);
    }
  });

  const invalid: [string, unknown, ApiErrorCode, string | undefined][] = [
    ['malformed JSON', '{"prompt": ', 'invalid_json', undefined],
    ['an empty body', '', 'invalid_json', undefined],
    ['a body that is an array', [{ prompt: 'x' }], 'invalid_body', undefined],
    ['a body that is a string', '"x"', 'invalid_body', undefined],
    ['no prompt', { n: 1 }, 'missing_prompt', 'prompt'],
    ['a prompt that is not a string', { prompt: 42 }, 'invalid_prompt', 'prompt'],
    ['an empty prompt', { prompt: '' }, 'empty_prompt', 'prompt'],
    ['a whitespace-only prompt', { prompt: ' \n\t ' }, 'empty_prompt', 'prompt'],
    ['another model', { prompt: 'x', model: 'dall-e-3' }, 'invalid_model', 'model'],
    ['a pixel size', { prompt: 'x', size: '1024x1024' }, 'invalid_size', 'size'],
    ['an unlisted ratio', { prompt: 'x', size: '7:3' }, 'invalid_size', 'size'],
    ['a lower-case resolution', { prompt: 'x', resolution: '1k' }, 'invalid_resolution', 'resolution'],
    ['resolution 8K', { prompt: 'x', resolution: '8K' }, 'invalid_resolution', 'resolution'],
    ['n = 0', { prompt: 'x', n: 0 }, 'invalid_n', 'n'],
    ['n above max_n', { prompt: 'x', n: 5 }, 'invalid_n', 'n'],
    ['a fractional n', { prompt: 'x', n: 1.5 }, 'invalid_n', 'n'],
    ['n as a string', { prompt: 'x', n: '2' }, 'invalid_n', 'n'],
    [
      'image_urls not an array',
      { prompt: 'x', image_urls: 'https://example.test/a.png' },
      'invalid_image_urls',
      'image_urls',
    ],
    [
      'a non-URL in image_urls',
      { prompt: 'x', image_urls: ['not a url'] },
      'invalid_image_urls',
      'image_urls',
    ],
    [
      'an ftp URL in image_urls',
      { prompt: 'x', image_urls: ['ftp://example.test/a.png'] },
      'invalid_image_urls',
      'image_urls',
    ],
    [
      'a non-ASCII host in image_urls',
      { prompt: 'x', image_urls: ['https://example.test/a.png', 'https://bücher.example/a.png'] },
      'invalid_image_urls',
      'image_urls',
    ],
    [
      'a non-ASCII path in image_urls',
      { prompt: 'x', image_urls: ['https://example.test/café.png'] },
      'invalid_image_urls',
      'image_urls',
    ],
    [
      '16 image_urls',
      { prompt: 'x', image_urls: Array.from({ length: 16 }, (_, i) => `https://e.test/${i}`) },
      'too_many_image_urls',
      'image_urls',
    ],
    ['a webhook that is no URL', { prompt: 'x', webhook: 'localhost:3000' }, 'invalid_webhook', 'webhook'],
    ['a file: webhook', { prompt: 'x', webhook: 'file:///etc/passwd' }, 'invalid_webhook', 'webhook'],
    // The spec's `uri` format is RFC 3986, on the string as sent: WHATWG's URL would take each of
    // these, punycoding the host or percent-encoding the rest.
    ['a webhook with a non-ASCII host', { prompt: 'x', webhook: 'https://Ï' }, 'invalid_webhook', 'webhook'],
    [
      'a webhook with a non-ASCII path',
      { prompt: 'x', webhook: 'http://127.0.0.1:9/café' },
      'invalid_webhook',
      'webhook',
    ],
    [
      'a webhook with a space',
      { prompt: 'x', webhook: 'http://127.0.0.1:9/my hook' },
      'invalid_webhook',
      'webhook',
    ],
    [
      'a webhook with a bad percent escape',
      { prompt: 'x', webhook: 'http://127.0.0.1:9/%zz' },
      'invalid_webhook',
      'webhook',
    ],
    [
      'a webhook with blanks around it',
      { prompt: 'x', webhook: ' http://127.0.0.1:9/hook' },
      'invalid_webhook',
      'webhook',
    ],
    ['a webhook without //', { prompt: 'x', webhook: 'http:127.0.0.1:9/hook' }, 'invalid_webhook', 'webhook'],
    ['an unsupported language', { prompt: 'x', language: 'fr' }, 'invalid_language', 'language'],
  ];

  it.each(invalid)(
    'answers %s with 400 %s, in each language the body can ask for',
    async (_, body, code, param) => {
      // A body that is no JSON object cannot name a language, and an unsupported one means en.
      const canAsk = typeof body === 'object' && !Array.isArray(body) && code !== 'invalid_language';
      for (const language of canAsk ? LANGUAGES : (['en'] as const)) {
        const response = await submit(canAsk ? { ...(body as object), language } : body);
        expect(response.status).toBe(400);
        expect(response.json.error).toMatchObject({ type: 'invalid_request_error', code });
        expect(response.json.error.param).toBe(param);
        expectCatalogueText(response.json.error.message, code, language);
        if (param) expect(response.json.error.message).toContain(param);
      }
    },
  );

  it('answers a body over 1 MiB with 400 body_too_large', async () => {
    const response = await submit({ prompt: 'x'.repeat(1024 * 1024 + 10), language: 'ja' });
    expect(response.status).toBe(400);
    expect(response.json.error.code).toBe('body_too_large');
    // The body was not read, so its language is unknown.
    expectCatalogueText(response.json.error.message, 'body_too_large', 'en');
    expect(response.json.error.message).toContain('1048576');
  });

  it('creates no task for a rejected request', async () => {
    const before = emulator.stats().tasks_total;
    await submit({ prompt: '' });
    await submit({ prompt: 'x', n: 99 });
    expect(emulator.stats().tasks_total).toBe(before);
  });

  it('writes 401 in each language of the submit body', async () => {
    for (const language of LANGUAGES) {
      const response = await submit({ prompt: 'x', language }, 'sk-nobody');
      expect(response.status).toBe(401);
      expectCatalogueText(response.json.error.message, 'invalid_api_key', language);
    }
  });
});

describe('credits', () => {
  it('reserves n x price at submit and answers 402 when the balance is short', async () => {
    const poor = await startTestEmulator({
      accounts: [{ id: 'acct_poor', credits: 10, keys: [{ key: 'sk-poor' }] }],
      generation: { credits_per_image: { '1K': 1, '2K': 3, '4K': 5 } },
    });
    const buy = (body: object) => call(poor.url, SUBMIT, { key: 'sk-poor', body: { prompt: 'p', ...body } });
    expect((await buy({ resolution: '2K', n: 2 })).status).toBe(200); // 6, leaves 4
    const refused = await buy({ resolution: '4K' }); // 5 > 4
    expect(refused.status).toBe(402);
    expect(refused.json.error).toMatchObject({ type: 'billing_error', code: 'insufficient_credits' });
    expect(refused.json.error.message).toContain('5');
    expect((await buy({ n: 4 })).status).toBe(200); // exactly the 4 left
    expect((await buy({})).status).toBe(402);
    expect(poor.stats().credits_charged).toBe(10);
    expect(poor.stats().tasks_total).toBe(2);
  });

  it('writes 402 in each language of the submit body, with cost and balance filled in', async () => {
    const broke = await startTestEmulator({
      accounts: [{ id: 'acct_broke', credits: 3, keys: [{ key: 'sk-broke' }] }],
    });
    for (const language of LANGUAGES) {
      const response = await call(broke.url, SUBMIT, {
        key: 'sk-broke',
        body: { prompt: 'x', resolution: '4K', language },
      });
      expect(response.status).toBe(402);
      expectCatalogueText(response.json.error.message, 'insufficient_credits', language);
      expect(response.json.error.message).toMatch(/4\D.*3/);
    }
  });

  it('checks the body before credits: a bad request from an empty account is a 400', async () => {
    const broke = await startTestEmulator({
      accounts: [{ id: 'acct_broke', credits: 0, keys: [{ key: 'sk-broke' }] }],
    });
    expect((await call(broke.url, SUBMIT, { key: 'sk-broke', body: { prompt: '' } })).status).toBe(400);
    expect(
      (await call(broke.url, SUBMIT, { key: 'sk-broke', body: { prompt: 'x', language: 'ko' } })).json.error
        .message,
    ).toMatch(/크레딧/);
  });
});
