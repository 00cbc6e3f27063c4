// The Replicate client against the Replicate emulator over real HTTP, on a manual clock: submits by
// model and by version with Cancel-After, each lookup (the created_after list sweep and its pages,
// the GET), results and their expiry after the hour, cancel, aborted deadlines, moderation,
// downloads, the error answers (401, 422, 429 both ways, 5xx), and the webhook secret.
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  InvalidRequestError,
  RateLimitError,
  ServerError,
} from '../api/errors.js';
import { lookUpTasks } from '../activities/task-lookups.js';
import { DEMO_WEBHOOK_SECRET, type ReplicateConfigOverrides } from '../emulator/replicate/index.js';
import { replicate, ReplicateClient, replicateSecretFetcher } from '../providers/replicate/index.js';
import type { ProviderRequest } from '../providers/types.js';
import { expectNoSecrets, rejection } from './support/assertions.js';
import { api, ManualClock, SDXL_VERSION, startReplicate, T0, TOKEN } from './emulator-replicate-helpers.js';

const SCHNELL = 'black-forest-labs/flux-schnell';
const QUEUE_S = 2;
const RUN_S = 3;

async function setup(config: ReplicateConfigOverrides = {}, apiKey = TOKEN) {
  const clock = new ManualClock(T0);
  const emulator = await startReplicate(
    { generation: { queue_seconds: QUEUE_S, run_seconds: RUN_S }, ...config },
    { clock },
  );
  const client = new ReplicateClient({ baseUrl: emulator.url, apiKey, now: () => clock.now() });
  onTestFinished(() => client.close());
  return { clock, emulator, client };
}

function requestFor(fields: { model?: string; prompt?: string; n?: number } = {}): ProviderRequest {
  const mapped = replicate.mapRequest({
    prompt: fields.prompt ?? 'a red fox in the snow',
    model: fields.model ?? SCHNELL,
    size: '16:9',
    resolution: '1K',
    n: fields.n ?? 1,
  });
  if ('problems' in mapped) throw new Error(JSON.stringify(mapped.problems));
  return mapped.request;
}

async function bytesOf(body: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('submit', () => {
  it('creates an official model prediction by name, with Cancel-After in whole seconds', async () => {
    const { emulator, client } = await setup();
    const { ref } = await client.submit(requestFor({ n: 2 }), { startWithinMs: 90_500 });
    const created = (await api(emulator, `/v1/predictions/${ref}`)).json;
    expect(created).toMatchObject({
      id: ref,
      model: SCHNELL,
      version: 'hidden',
      status: 'starting',
      input: { prompt: 'a red fox in the snow', aspect_ratio: '16:9', megapixels: '1', num_outputs: 2 },
      deadline: new Date(T0 + 91_000).toISOString(),
    });
    expect(client.stats()).toEqual({
      'POST /v1/models/{owner}/{name}/predictions': { calls: 1, failures: 0 },
    });
  });

  it('creates a community model prediction by version, at the deadline minimum of 5 s', async () => {
    const { emulator, client } = await setup();
    const { ref } = await client.submit(
      { model: `stability-ai/sdxl:${SDXL_VERSION}`, body: { input: { prompt: 'a lighthouse' } } },
      { startWithinMs: 1200 },
    );
    expect((await api(emulator, `/v1/predictions/${ref}`)).json).toMatchObject({
      model: 'stability-ai/sdxl',
      version: SDXL_VERSION,
      deadline: new Date(T0 + 5000).toISOString(),
    });
    expect(client.stats()['POST /v1/predictions']).toEqual({ calls: 1, failures: 0 });
  });

  it('refuses a 422 input as a bad request, and an unknown version too', async () => {
    const { client } = await setup();
    const badInput = await rejection(
      client.submit({ model: SCHNELL, body: { input: { prompt: 'x', aspect_ratio: '7:5' } } }),
    );
    expect(badInput).toBeInstanceOf(BadRequestError);
    expect((badInput as Error).message).toContain('aspect_ratio');
    const badVersion = await rejection(
      client.submit({ model: 'f'.repeat(64), body: { input: { prompt: 'x' } } }),
    );
    expect(badVersion).toBeInstanceOf(BadRequestError);
  });
});

describe('lookups and results', () => {
  it('follows one prediction from pending to completed, its URLs kept an hour, then expired', async () => {
    const { clock, client } = await setup();
    const { ref } = await client.submit(requestFor({ n: 2 }));
    expect(await client.lookupOne(ref)).toEqual({ status: 'pending' });
    clock.advance(QUEUE_S * 1000);
    expect(await client.lookupOne(ref)).toEqual({ status: 'processing' });
    clock.advance(RUN_S * 1000);
    const completedAt = T0 + (QUEUE_S + RUN_S) * 1000;
    const result = await client.getTask(ref);
    expect(result).toEqual({
      status: 'completed',
      urls: [expect.any(String), expect.any(String)],
      expiresAt: completedAt + 3_600_000,
    });
    expect(await client.lookupOne(ref)).toEqual({ status: 'completed', result });

    const image = await client.download(result.urls![0]!);
    const bytes = await bytesOf(image.body);
    expect(bytes.subarray(8, 12).toString('latin1')).toBe('WEBP');

    clock.advance(3_600_000);
    expect(await client.getTask(ref)).toEqual({ status: 'expired' });
    expect(await client.lookupOne(ref)).toEqual({ status: 'expired', result: { status: 'expired' } });
  });

  it('answers not_found for a prediction the API does not know', async () => {
    const { client } = await setup();
    expect(await client.lookupOne('nosuchprediction00000000000')).toEqual({ status: 'not_found' });
    expect(await client.getTask('nosuchprediction00000000000')).toEqual({ status: 'not_found' });
  });

  it('sweeps the list created after a moment, newest first, page by page', async () => {
    const { clock, client } = await setup({ list: { page_size: 2 } });
    const refs: string[] = [];
    for (let i = 0; i < 4; i++) {
      refs.push((await client.submit(requestFor({ prompt: `fox ${i}` }))).ref);
      clock.advance(1000);
    }
    clock.advance((QUEUE_S + RUN_S) * 1000);
    const first = await client.listTasks({ sinceMs: T0 + 500 });
    expect(first.tasks.map((task) => task.id)).toEqual([refs[3], refs[2]]);
    expect(first.tasks[0]).toMatchObject({
      createdMs: T0 + 3000,
      status: 'completed',
      result: { status: 'completed' },
    });
    expect(first.tasks[0]!.result!.urls).toHaveLength(1);
    expect(first.next).toEqual(expect.any(String));
    const second = await client.listTasks({ cursor: first.next! });
    expect(second.tasks.map((task) => task.id)).toEqual([refs[1]]);
    expect(second.next).toBeUndefined();
    expect(client.stats()['GET /v1/predictions']).toEqual({ calls: 2, failures: 0 });
  });

  it("drives the activities' list sweep: pages first, then a GET for a task the sweep missed", async () => {
    const { clock, client } = await setup({ list: { page_size: 2 } });
    const refs: string[] = [];
    for (let i = 0; i < 3; i++) {
      refs.push((await client.submit(requestFor({ prompt: `fox ${i}` }))).ref);
      clock.advance(1000);
    }
    clock.advance((QUEUE_S + RUN_S) * 1000);
    const swept = await lookUpTasks(client, replicate.capabilities.lookup, { refs, sinceMs: T0 }, (call) =>
      call(),
    );
    expect(swept.calls).toBe(2);
    expect(swept.states.map((state) => state.status)).toEqual(['completed', 'completed', 'completed']);
    expect(swept.states.every((state) => state.result?.urls?.length === 1)).toBe(true);
    // A sweep from after the first prediction's creation misses it: one GET finds it.
    const late = await lookUpTasks(
      client,
      replicate.capabilities.lookup,
      { refs, sinceMs: T0 + 500 },
      (call) => call(),
    );
    expect(late.calls).toBe(2);
    expect(late.states[0]).toMatchObject({ status: 'completed', result: { status: 'completed' } });
    expect(client.stats()['GET /v1/predictions/{id}']).toEqual({ calls: 1, failures: 0 });
  });

  it('gives list entries without output as completed without a result (the GET collects them)', async () => {
    const { clock, client } = await setup({ list: { include_output: false } });
    const { ref } = await client.submit(requestFor());
    clock.advance((QUEUE_S + RUN_S) * 1000);
    expect((await client.listTasks({ sinceMs: T0 })).tasks).toEqual([
      { id: ref, createdMs: T0, status: 'completed' },
    ]);
  });

  it('follows a cursor only on the API origin, and sends nothing otherwise', async () => {
    const { client } = await setup();
    const error = await rejection(
      client.listTasks({ cursor: 'http://127.0.0.2:9/v1/predictions?cursor=abc' }),
    );
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(client.stats()['GET /v1/predictions']).toBeUndefined();
  });
});

describe('endings', () => {
  it('cancels a running prediction: failed, cancelled; a cancel of an unknown one resolves', async () => {
    const { clock, client } = await setup();
    const { ref } = await client.submit(requestFor());
    clock.advance(QUEUE_S * 1000 + 500);
    await client.cancel(ref);
    expect(await client.getTask(ref)).toEqual({
      status: 'failed',
      error: { type: 'task_timeout', code: 'canceled', message: expect.any(String) },
    });
    await expect(client.cancel('nosuchprediction00000000000')).resolves.toBeUndefined();
    expect(client.stats()['POST /v1/predictions/{id}/cancel']).toEqual({ calls: 2, failures: 1 });
  });

  it('a prediction not started by its Cancel-After deadline is aborted: failed, task_timeout', async () => {
    const { clock, client } = await setup({ generation: { queue_seconds: 30, run_seconds: 1 } });
    const { ref } = await client.submit(requestFor(), { startWithinMs: 10_000 });
    clock.advance(10_000);
    expect(await client.lookupOne(ref)).toEqual({
      status: 'failed',
      result: {
        status: 'failed',
        error: { type: 'task_timeout', code: 'aborted', message: expect.any(String) },
      },
    });
  });

  it('a moderated prompt fails as content_policy_violation', async () => {
    const { clock, client } = await setup();
    const { ref } = await client.submit(requestFor({ prompt: 'something forbidden' }));
    clock.advance((QUEUE_S + RUN_S) * 1000);
    expect(await client.getTask(ref)).toMatchObject({
      status: 'failed',
      error: { type: 'content_policy_violation', message: expect.stringContaining('NSFW') },
    });
  });
});

describe('error answers', () => {
  it('a wrong key is an AuthenticationError that never quotes the key', async () => {
    const wrong = 'r8_wrongTokenThatMustNotLeak000000000000';
    const { client } = await setup({}, wrong);
    const error = await rejection(client.lookupOne('abc'));
    expect(error).toBeInstanceOf(AuthenticationError);
    expectNoSecrets([error], [wrong]);
  });

  it('a 429 is a rate limit waiting as Retry-After says', async () => {
    const { client } = await setup({ limits: { create: { requests: 1, window_seconds: 60, burst: 1 } } });
    await client.submit(requestFor());
    const error = await rejection(client.submit(requestFor()));
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ limit: 'rate', retryable: true, retryAfterMs: 60_000 });
  });

  it('a 429 without Retry-After waits as its detail says', async () => {
    const { client } = await setup({
      limits: {
        create: { requests: 1, window_seconds: 60, burst: 1 },
        retry_after_header: false,
        throttle_message: 'expected_available',
      },
    });
    await client.submit(requestFor());
    const error = await rejection(client.submit(requestFor()));
    expect(error).toMatchObject({ name: 'RateLimitError', limit: 'rate', retryAfterMs: 60_000 });
    expect((error as Error).message).toContain('Expected available in 60 seconds');
  });

  it('a 5xx is a retryable ServerError', async () => {
    const { client } = await setup({ faults: { server_error_rate: { get: 1 } } });
    const error = await rejection(client.getTask('abc'));
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ retryable: true });
  });
});

describe('the webhook secret', () => {
  it('is the account signing secret, through the client and the receiver helper', async () => {
    const { emulator, client } = await setup();
    expect(await client.webhookSecret()).toBe(DEMO_WEBHOOK_SECRET);
    expect(await replicateSecretFetcher({ baseUrl: emulator.url, apiKey: TOKEN })()).toBe(
      DEMO_WEBHOOK_SECRET,
    );
    expect(client.stats()['GET /v1/webhooks/default/secret']).toEqual({ calls: 1, failures: 0 });
  });
});
