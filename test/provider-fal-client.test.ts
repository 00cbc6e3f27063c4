// fal's client against a tiny local server that answers whatever each test crafts: the calls as
// sent (paths, headers, query), the task reference kept from fal's URLs, each lookup and result
// reading, cancel, classified errors, untrusted URLs refused, and the key in no message.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuthenticationError, InvalidRequestError, InvalidResponseError, ServerError } from '../api/index.js';
import { fal, FalClient, RESULT_RETENTION_MS } from '../providers/fal/index.js';
import { expectNoSecrets, rejection } from './support/assertions.js';
import { startLoopbackServer, type LoopbackServer } from './support/loopback-server.js';

const KEY = 'fal-key-very-secret-0123456789';
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

let server: LoopbackServer;
let origin: string;
let handler: Handler;
let seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
let client: FalClient;

const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));

/** fal's submit answer, its URLs under `base` without the model's sub-path. */
const queued = (base: string, id = 'req-1', app = 'fal-ai/flux', position = 0) => ({
  status: 'IN_QUEUE',
  request_id: id,
  response_url: `${base}/${app}/requests/${id}`,
  status_url: `${base}/${app}/requests/${id}/status`,
  cancel_url: `${base}/${app}/requests/${id}/cancel`,
  queue_position: position,
});
const REF = 'req-1|fal-ai/flux/requests/req-1';

beforeAll(async () => {
  server = await startLoopbackServer((req, res, bytes) => {
    const body = bytes.toString('utf8');
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    handler(req, res, body);
  });
  origin = server.origin;
});
afterAll(() => server.close());
beforeEach(() => {
  seen = [];
  client = new FalClient({ baseUrl: origin, apiKey: KEY, now: () => NOW });
});
afterEach(() => client.close());

describe('fal client: submit', () => {
  it('POSTs the body to the model id with Key auth, the webhook as fal_webhook and X-Fal-Request-Timeout', async () => {
    handler = (_req, res) =>
      json(res, 200, queued(origin, 'req-1', 'fal-ai/flux', 7), { 'x-fal-request-id': 'req-1' });
    const task = await client.submit(
      { model: 'fal-ai/flux/dev', body: { prompt: 'a chair', num_images: 2 } },
      {
        webhook: 'https://hooks.example/hooks/fal/pixelmill%2Fc%2Fshard-0001',
        startWithinMs: 90_500,
        idempotencyKey: 'pm-key-1',
      },
    );
    // The account's requests waiting ahead of it: what the concurrency cap keeps at a margin.
    expect(task).toEqual({ ref: REF, queuePosition: 7 });
    const [call] = seen;
    expect(call?.method).toBe('POST');
    const url = new URL(call!.url, origin);
    expect(url.pathname).toBe('/fal-ai/flux/dev');
    expect(url.searchParams.get('fal_webhook')).toBe(
      'https://hooks.example/hooks/fal/pixelmill%2Fc%2Fshard-0001',
    );
    expect(call?.headers.authorization).toBe(`Key ${KEY}`);
    expect(call?.headers['x-fal-request-timeout']).toBe('91');
    // fal documents no idempotency key: none is sent (a retried submit may make a second request).
    expect(Object.keys(call!.headers).filter((h) => /idempot/i.test(h))).toEqual([]);
    expect(JSON.parse(call!.body)).toEqual({ prompt: 'a chair', num_images: 2 });
    expect(client.stats()).toEqual({ 'POST /{model_id}': { calls: 1, failures: 0 } });
  });

  it('sends no webhook or deadline unless asked; a deadline under 2 s is sent as 2', async () => {
    handler = (_req, res) => json(res, 200, queued(origin));
    await client.submit({ model: 'fal-ai/flux/dev', body: { prompt: 'x' } });
    expect(new URL(seen[0]!.url, origin).search).toBe('');
    expect(seen[0]?.headers['x-fal-request-timeout']).toBeUndefined();
    await client.submit({ model: 'fal-ai/flux/dev', body: { prompt: 'x' } }, { startWithinMs: 300 });
    expect(seen[1]?.headers['x-fal-request-timeout']).toBe('2');
  });

  it('keeps the path below a base that has one (a proxy)', async () => {
    const proxied = new FalClient({ baseUrl: `${origin}/gateway/fal/`, apiKey: KEY });
    try {
      handler = (_req, res) => json(res, 200, queued(`${origin}/gateway/fal`));
      expect(await proxied.submit({ model: 'fal-ai/flux/dev', body: {} })).toEqual({
        ref: REF,
        queuePosition: 0,
      });
      expect(seen[0]?.url).toBe('/gateway/fal/fal-ai/flux/dev');
      handler = (_req, res) => json(res, 202, { status: 'IN_PROGRESS' });
      expect(await proxied.lookupOne(REF)).toEqual({ status: 'processing' });
      expect(seen[1]?.url).toBe('/gateway/fal/fal-ai/flux/requests/req-1/status');
    } finally {
      await proxied.close();
    }
  });

  it("refuses URLs off the base's origin or not beside each other: the request exists, so the outcome is unknown", async () => {
    handler = (_req, res) => json(res, 200, queued('https://elsewhere.example'));
    const elsewhere = await rejection(client.submit({ model: 'fal-ai/flux/dev', body: {} }));
    expect(elsewhere).toBeInstanceOf(InvalidResponseError);
    expect(elsewhere).toMatchObject({ outcomeUnknown: true, retryable: true });
    handler = (_req, res) =>
      json(res, 200, { ...queued(origin), cancel_url: `${origin}/fal-ai/other/requests/req-1/cancel` });
    expect(await rejection(client.submit({ model: 'fal-ai/flux/dev', body: {} }))).toBeInstanceOf(
      InvalidResponseError,
    );
    handler = (_req, res) => json(res, 200, { request_id: 'req-1', gateway_request_id: 'req-1' });
    expect(await rejection(client.submit({ model: 'fal-ai/flux/dev', body: {} }))).toMatchObject({
      name: 'InvalidResponseError',
      outcomeUnknown: true,
    });
  });

  it('refuses a model id that is not one, before sending', async () => {
    expect(await rejection(client.submit({ model: '../admin', body: {} }))).toBeInstanceOf(
      InvalidRequestError,
    );
    expect(seen).toEqual([]);
  });

  it('classifies error answers: 401 authentication, 429 rate, 5xx retryable and outcome unknown', async () => {
    handler = (_req, res) => json(res, 401, { detail: `No user found for Key ${KEY}` });
    const denied = await rejection(client.submit({ model: 'fal-ai/flux/dev', body: {} }));
    expect(denied).toBeInstanceOf(AuthenticationError);
    expectNoSecrets([denied], [KEY]);
    handler = (_req, res) => json(res, 429, { detail: 'Too many requests' }, { 'retry-after': '3' });
    expect(await rejection(client.submit({ model: 'fal-ai/flux/dev', body: {} }))).toMatchObject({
      name: 'RateLimitError',
      retryAfterMs: 3000,
    });
    handler = (_req, res) => json(res, 503, { detail: 'Service unavailable', error_type: 'internal_error' });
    const down = await rejection(client.submit({ model: 'fal-ai/flux/dev', body: {} }));
    expect(down).toBeInstanceOf(ServerError);
    expect(down).toMatchObject({ retryable: true, outcomeUnknown: true });
  });
});

describe('fal client: lookups', () => {
  it('reads the status: IN_QUEUE with its position, IN_PROGRESS, COMPLETED (with no result: only the result call tells)', async () => {
    const answers = [
      [202, { status: 'IN_QUEUE', queue_position: 7 }],
      [202, { status: 'IN_QUEUE' }],
      [202, { status: 'IN_PROGRESS', logs: null }],
      [
        200,
        { status: 'COMPLETED', logs: null, metrics: { inference_time: 2.1 }, error: 'x', error_type: 'y' },
      ],
      [200, { status: 'SOMETHING_NEW' }],
    ] as const;
    let k = 0;
    handler = (_req, res) => {
      const [status, body] = answers[k++]!;
      json(res, status, body);
    };
    expect(await client.lookupOne(REF)).toEqual({ status: 'pending', queuePosition: 7 });
    expect(await client.lookupOne(REF)).toEqual({ status: 'pending' });
    expect(await client.lookupOne(REF)).toEqual({ status: 'processing' });
    expect(await client.lookupOne(REF)).toEqual({ status: 'completed' });
    expect(await client.lookupOne(REF)).toEqual({ status: 'SOMETHING_NEW' });
    expect(seen.map((c) => `${c.method} ${c.url}`)).toEqual(
      Array(5).fill('GET /fal-ai/flux/requests/req-1/status'),
    );
    expect(client.stats()).toEqual({ 'GET {status_url}': { calls: 5, failures: 0 } });
  });

  it('a request fal no longer knows is expired; a reference without a locator is refused unsent', async () => {
    handler = (_req, res) => json(res, 404, { detail: 'Request not found' });
    expect(await client.lookupOne(REF)).toEqual({ status: 'expired' });
    expect(await rejection(client.lookupOne('req-1'))).toBeInstanceOf(InvalidRequestError);
    expect(seen).toHaveLength(1);
  });
});

describe('fal client: results', () => {
  it('images: completed with the URLs; the call is the response URL', async () => {
    handler = (_req, res) =>
      json(
        res,
        200,
        {
          images: [{ url: `${origin}/cdn/0.jpeg`, width: 1024, height: 1024 }],
          seed: 3,
          has_nsfw_concepts: [false],
        },
        { 'x-fal-request-id': 'req-1' },
      );
    expect(await client.getTask(REF)).toEqual({
      status: 'completed',
      urls: [`${origin}/cdn/0.jpeg`],
      expiresAt: NOW + RESULT_RETENTION_MS,
    });
    expect(seen[0]?.url).toBe('/fal-ai/flux/requests/req-1');
  });

  it("reads the request's outcome: model error, moderation, the start timeout; too early; gone", async () => {
    const fal = { 'x-fal-request-id': 'req-1' };
    const answers: [number, unknown, Record<string, string>][] = [
      [422, { detail: [{ loc: ['body', 'prompt'], msg: 'flagged', type: 'content_policy_violation' }] }, fal],
      [
        500,
        { detail: 'Internal server error', error_type: 'runner_server_error' },
        { ...fal, 'x-fal-error-type': 'runner_server_error' },
      ],
      [
        504,
        { detail: 'Request timed out', error_type: 'request_timeout' },
        { ...fal, 'x-fal-request-timeout-type': 'user' },
      ],
      [400, { detail: 'Request is still in progress' }, {}],
      [404, { detail: 'Request not found' }, {}],
    ];
    let k = 0;
    handler = (_req, res) => {
      const [status, body, headers] = answers[k++]!;
      json(res, status, body, headers);
    };
    expect(await client.getTask(REF)).toMatchObject({
      status: 'failed',
      error: { type: 'content_policy_violation' },
    });
    expect(await client.getTask(REF)).toMatchObject({
      status: 'failed',
      error: { type: 'generation_error', code: 'runner_server_error' },
    });
    expect(await client.getTask(REF)).toMatchObject({
      status: 'failed',
      error: { type: 'task_timeout', code: 'aborted' },
    });
    expect(await client.getTask(REF)).toEqual({ status: 'processing' });
    expect(await client.getTask(REF)).toEqual({ status: 'expired' });
  });

  it("a gateway's 5xx is a retryable ServerError, not the request's failure", async () => {
    handler = (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>nginx</html>');
    const error = await rejection(client.getTask(REF));
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ retryable: true, endpoint: 'GET {response_url}' });
  });

  it('a 2xx that holds neither images nor a status is an invalid (retryable) answer', async () => {
    handler = (_req, res) => json(res, 200, { video: { url: 'x' } });
    expect(await rejection(client.getTask(REF))).toBeInstanceOf(InvalidResponseError);
  });
});

describe('fal client: cancel', () => {
  it('PUTs the cancel URL; already completed and not found are done; other errors are thrown', async () => {
    const answers: [number, unknown][] = [
      [202, { status: 'CANCELLATION_REQUESTED' }],
      [400, { status: 'ALREADY_COMPLETED' }],
      [404, { status: 'NOT_FOUND' }],
      [500, { detail: 'boom' }],
      [400, { detail: 'bad' }],
    ];
    let k = 0;
    handler = (_req, res) => {
      const [status, body] = answers[k++]!;
      json(res, status, body);
    };
    await client.cancel(REF);
    await client.cancel(REF);
    await client.cancel(REF);
    expect(await rejection(client.cancel(REF))).toBeInstanceOf(ServerError);
    expect(await rejection(client.cancel(REF))).toMatchObject({ name: 'BadRequestError' });
    expect(seen.map((c) => `${c.method} ${c.url}`)).toEqual(
      Array(5).fill('PUT /fal-ai/flux/requests/req-1/cancel'),
    );
  });
});

describe('fal as an ImageProvider', () => {
  it('states its capabilities as fal documents them', () => {
    expect(fal.capabilities).toEqual({
      lookup: { kind: 'single' },
      resultInLookup: false,
      statusStream: true,
      webhooks: { resultInPayload: 'sometimes' },
      limits: { rate: false, concurrency: true, documentedConcurrency: 2, overConcurrency: 'queued' },
      resultRetentionMs: 360_000,
      cancel: true,
      idempotencyKeys: false,
      reportsCost: false,
      startDeadline: true,
      maxImagesPerTask: 4,
    });
    expect(fal.defaultModel).toBe('fal-ai/flux/dev');
    expect(fal.createClient({ baseUrl: origin, apiKey: KEY })).toBeInstanceOf(FalClient);
  });

  it('never shows the key: not in errors, not in the client', async () => {
    handler = (_req, res) =>
      json(res, 500, { detail: `server echoed ${KEY}` }, { 'x-fal-request-id': 'req-1' });
    const result = await client.getTask(REF);
    const error = await rejection(client.lookupOne(REF));
    expect(error).toBeInstanceOf(ServerError);
    expectNoSecrets([result, error, client], [KEY]);
  });
});
