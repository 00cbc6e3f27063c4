// The BFL client against the BFL emulator over real HTTP (and a capture server for what the wire
// must and must not carry): submit, lookupOne and getTask at the polling_url, regional polling
// hosts, downloads and the sample URL's expiry, moderation and failures, error answers (403, 422,
// 429, 402, 5xx), "Task not found", cancel.
import type { IncomingHttpHeaders } from 'node:http';
import { onTestFinished, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  ImageApiError,
  InsufficientCreditsError,
  RateLimitError,
  ResultExpiredError,
  ServerError,
} from '../api/errors.js';
import { locatorOf, taskIdOf } from '../common/task-ref.js';
import type { BflConfigOverrides } from '../emulator/bfl/index.js';
import { bfl } from '../providers/bfl/index.js';
import type { ProviderClient, ProviderRequest } from '../providers/types.js';
import { DEMO_BFL_KEY, fixed, ManualClock, startTestBfl } from './support/emulator-bfl.js';
import { startLoopbackServer } from './support/loopback-server.js';

const CHAIR: ProviderRequest = {
  model: 'flux-pro-1.1',
  body: { prompt: 'a red chair', width: 1024, height: 768 },
};

function clientFor(baseUrl: string, clock: ManualClock, apiKey = DEMO_BFL_KEY): ProviderClient {
  const client = bfl.createClient({ baseUrl, apiKey, now: () => clock.now() });
  onTestFinished(() => client.close());
  return client;
}

/** The emulator on a manual clock (queue 2 s, FLUX1.1 [pro] 10 s) and a client of it. */
async function setup(config: BflConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestBfl(fixed(config), { clock });
  return { clock, emulator, client: clientFor(emulator.url, clock) };
}

async function bytesOf(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('the BFL client against its emulator', () => {
  it('submits, polls the polling_url until Ready, and downloads the sample', async () => {
    const { clock, emulator, client } = await setup();
    const t0 = clock.now();
    const task = await client.submit(CHAIR);
    expect(task.creditsCost).toBe(4);
    expect(locatorOf(task.ref)).toBe(`${emulator.url}/v1/get_result?id=${taskIdOf(task.ref)}`);

    expect(await client.lookupOne(task.ref)).toEqual({ status: 'pending' });
    clock.advance(11_999);
    expect(await client.lookupOne(task.ref)).toEqual({ status: 'pending' });
    clock.advance(1 + 60_000);
    const state = await client.lookupOne(task.ref);
    // The sample URL's own expiry (10 minutes from its signing at the end) beats now + 10 minutes.
    expect(state).toEqual({
      status: 'completed',
      result: { status: 'completed', urls: [expect.any(String)], expiresAt: t0 + 12_000 + 600_000 },
    });
    expect(await client.getTask(task.ref)).toEqual(state.result);

    const image = await client.download(state.result!.urls![0]!);
    expect(image.contentType).toBe('image/jpeg');
    const bytes = await bytesOf(image.body);
    expect(bytes.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    expect(client.stats()).toEqual({
      'POST /v1/{model}': { calls: 1, failures: 0 },
      'GET {polling_url}': { calls: 4, failures: 0 },
      'GET {result_url}': { calls: 1, failures: 0 },
    });
    expect(emulator.stats().samples.downloads).toBe(1);
  });

  it('a sample URL past its 10 minutes is an expired result, not a retryable failure', async () => {
    const { clock, client } = await setup();
    const task = await client.submit(CHAIR);
    clock.advance(12_000);
    const { result } = await client.lookupOne(task.ref);
    clock.advance(600_000);
    const failure = await client.download(result!.urls![0]!).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ResultExpiredError);
    expect((failure as ResultExpiredError).retryable).toBe(false);
    expect((failure as Error).message).not.toContain('sig=');
  });

  it('polls a regional polling host of the same service (a loopback name on the same port)', async () => {
    const { clock, emulator, client } = await setup({ polling_host: 'localhost' });
    const task = await client.submit(CHAIR);
    expect(new URL(locatorOf(task.ref)!).host).toBe(`localhost:${new URL(emulator.url).port}`);
    clock.advance(12_000);
    expect((await client.lookupOne(task.ref)).status).toBe('completed');
    expect(emulator.stats().polls_on_other_host).toBe(0);
  });

  it('maps moderation and failures', async () => {
    const { clock, client } = await setup();
    const refused = await client.submit({ model: 'flux-pro-1.1', body: { prompt: 'a forbidden chair' } });
    const flagged = await client.submit({ model: 'flux-pro-1.1', body: { prompt: 'an unseemly chair' } });
    clock.advance(60_000);
    expect(await client.getTask(refused.ref)).toEqual({
      status: 'failed',
      error: {
        type: 'content_policy_violation',
        code: 'Request Moderated',
        message: "BFL's moderation refused the request: Input prompt",
      },
      creditsCost: 0,
    });
    expect((await client.getTask(flagged.ref)).error).toMatchObject({
      type: 'content_policy_violation',
      code: 'Content Moderated',
    });

    const failing = await setup({ generation: { failure_rate: 1 } });
    const broken = await failing.client.submit(CHAIR);
    failing.clock.advance(60_000);
    expect(await failing.client.lookupOne(broken.ref)).toEqual({
      status: 'failed',
      result: {
        status: 'failed',
        error: {
          type: 'generation_error',
          code: 'Error',
          message: "BFL's generation failed: Generation failed",
        },
      },
    });
  });

  it('"Task not found" is the answer not_found, whether BFL says it with a 200 or a 404', async () => {
    for (const status of [200, 404] as const) {
      const { emulator, client } = await setup({ task_not_found_status: status });
      const ref = `nope|${emulator.url}/v1/get_result?id=nope`;
      expect(await client.lookupOne(ref)).toEqual({ status: 'not_found' });
      expect(await client.getTask(ref)).toEqual({ status: 'not_found' });
    }
  });

  it('a task known by its id alone is polled on the base URL; not found there is not conclusive', async () => {
    const { clock, client } = await setup({ webhooks: { submit_answer: 'webhook_response' } });
    const task = await client.submit(CHAIR, { webhook: 'http://127.0.0.1:9/hooks/bfl/x' });
    // The webhook answer has no polling_url: the reference is the id.
    expect(locatorOf(task.ref)).toBeUndefined();
    clock.advance(12_000);
    expect((await client.lookupOne(task.ref)).status).toBe('completed');

    // Behind a global endpoint, another cluster may hold it: "Task not found" leaves it unfinished.
    const regional = await setup({
      polling_host: 'localhost',
      webhooks: { submit_answer: 'webhook_response' },
    });
    const elsewhere = await regional.client.submit(CHAIR, { webhook: 'http://127.0.0.1:9/hooks/bfl/x' });
    expect(await regional.client.lookupOne(elsewhere.ref)).toEqual({ status: 'unlocated' });
    expect(regional.emulator.stats().polls_on_other_host).toBe(1);
  });

  it('cancel resolves without a call: BFL has no cancel endpoint', async () => {
    const { client } = await setup();
    const task = await client.submit(CHAIR);
    await client.cancel(task.ref);
    expect(Object.keys(client.stats())).toEqual(['POST /v1/{model}']);
  });
});

describe('BFL error answers', () => {
  it('a wrong key (403 Not authenticated) is an authentication failure', async () => {
    const { emulator, clock } = await setup();
    const failure = await clientFor(emulator.url, clock, 'not-a-key')
      .submit(CHAIR)
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AuthenticationError);
    expect((failure as Error).message).not.toContain('not-a-key');
  });

  it("a 422 is a bad request naming FastAPI's problems", async () => {
    const { client } = await setup();
    const failure = await client
      .submit({ model: 'flux-pro-1.1', body: { prompt: 'x', width: 100 } })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BadRequestError);
    expect((failure as BadRequestError).httpStatus).toBe(422);
    expect((failure as Error).message).toMatch(/width: Input should be a multiple of 32/);
  });

  it('a 429 over the active tasks is a concurrency limit, retryable', async () => {
    const { client } = await setup({ limits: { active_tasks: 2 } });
    await client.submit(CHAIR);
    await client.submit(CHAIR);
    const failure = await client.submit(CHAIR).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RateLimitError);
    expect((failure as RateLimitError).limit).toBe('concurrency');
    expect((failure as RateLimitError).retryable).toBe(true);
  });

  it('402 is out of credits; 5xx are retryable server errors on submit and poll', async () => {
    const poor = await setup({ accounts: [{ id: 'acct_demo', credits: 1, keys: [{ key: DEMO_BFL_KEY }] }] });
    const broke = await poor.client.submit(CHAIR).catch((error: unknown) => error);
    expect(broke).toBeInstanceOf(InsufficientCreditsError);

    const failing = await setup({ faults: { server_error_rate: { submit: 1, get_result: 1 } } });
    const submitFailure = await failing.client.submit(CHAIR).catch((error: unknown) => error);
    expect(submitFailure).toBeInstanceOf(ServerError);
    expect((submitFailure as ServerError).outcomeUnknown).toBe(true);
    const pollFailure = await failing.client
      .lookupOne(`x|${failing.emulator.url}/v1/get_result?id=x`)
      .catch((error: unknown) => error);
    expect(pollFailure).toBeInstanceOf(ServerError);
  });
});

interface Captured {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A loopback server that records each request and answers `answer(request)` as JSON. */
async function captureServer(answer: (request: Captured) => { status: number; body: unknown }) {
  const requests: Captured[] = [];
  const server = await startLoopbackServer((req, res, body) => {
    const captured = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: body.toString('utf8'),
    };
    requests.push(captured);
    const { status, body: reply } = answer(captured);
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  });
  onTestFinished(() => server.close());
  return { url: server.origin, requests };
}

describe('what a BFL submit carries', () => {
  it('x-key, the body, webhook_url as given and webhook_secret; no idempotency or deadline header', async () => {
    const clock = new ManualClock();
    const api = await captureServer(() => ({
      status: 200,
      body: { id: 't-1', polling_url: null, cost: 2.5 },
    }));
    const client = clientFor(api.url, clock, 'the-key');
    const task = await client.submit(CHAIR, {
      webhook: 'https://hooks.example.com/hooks/bfl/pixelmill%2Fdemo%2Fshard-0001',
      webhookSecret: 'shh',
      idempotencyKey: 'pixelmill-call-1',
      startWithinMs: 60_000,
    });
    expect(task).toEqual({ ref: 't-1', creditsCost: 2.5 });
    const [sent] = api.requests;
    expect(sent).toMatchObject({ method: 'POST', url: '/v1/flux-pro-1.1' });
    expect(sent!.headers['x-key']).toBe('the-key');
    expect(sent!.headers.authorization).toBeUndefined();
    expect(sent!.headers['idempotency-key']).toBeUndefined();
    expect(Object.keys(sent!.headers).filter((name) => /timeout|cancel-after|deadline/i.test(name))).toEqual(
      [],
    );
    expect(JSON.parse(sent!.body)).toEqual({
      ...CHAIR.body,
      webhook_url: 'https://hooks.example.com/hooks/bfl/pixelmill%2Fdemo%2Fshard-0001',
      webhook_secret: 'shh',
    });
  });

  it('refuses a polling_url on another origin, and never sends the key there', async () => {
    const clock = new ManualClock();
    const elsewhere = await captureServer(() => ({ status: 200, body: { id: 't-2', status: 'Pending' } }));
    const api = await captureServer(() => ({
      status: 200,
      body: { id: 't-2', polling_url: `${elsewhere.url}/v1/get_result?id=t-2`, cost: 4 },
    }));
    const client = clientFor(api.url, clock);
    const failure = await client.submit(CHAIR).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ImageApiError);
    expect(failure).toMatchObject({ code: 'api_untrusted_polling_url', retryable: false });
    expect((failure as Error).message).toContain(elsewhere.url);
    // Nor by a reference that names it.
    const lookup = await client
      .lookupOne(`t-2|${elsewhere.url}/v1/get_result?id=t-2`)
      .catch((error: unknown) => error);
    expect(lookup).toMatchObject({ code: 'api_invalid_request', retryable: false });
    expect(elsewhere.requests).toEqual([]);
  });

  it('refuses an answer that describes another task', async () => {
    const clock = new ManualClock();
    const api = await captureServer(() => ({ status: 200, body: { id: 'other', status: 'Pending' } }));
    const failure = await clientFor(api.url, clock)
      .lookupOne('t-3')
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'api_invalid_response' });
    expect(api.requests[0]!.url).toBe('/v1/get_result?id=t-3');
  });
});
