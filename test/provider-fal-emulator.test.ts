// fal's client and webhook verifier against the fal emulator over real HTTP, on a manual clock:
// a request's life (queue position, progress, completion, result, images), the start deadline,
// moderation both ways, a model's validation error, cancel, retention (expired), errors (401,
// injected 5xx), and webhooks end to end into the receiver: result in the payload, payload_error
// fetched, rotated keys, a forged delivery refused.
import { describe, expect, it, onTestFinished } from 'vitest';
import { request } from 'undici';
import { AuthenticationError, ServerError } from '../api/index.js';
import type { TaskFinishedSignal } from '../common/types.js';
import { DEMO_FAL_KEY, startFalEmulator, type FalConfigOverrides } from '../emulator/fal/index.js';
import { fal, falWebhookVerifier, type FalClient } from '../providers/fal/index.js';
import type { ItemRequest, ProviderRequest } from '../providers/types.js';
import { startWebhookServer } from '../webhook/server.js';
import { ManualClock } from './support/emulator.js';
import { rejection } from './support/assertions.js';
import { waitUntil } from './support/wait.js';

/** Queue 1 s, FLUX.1 [dev] 4 s, exactly; results kept 60 s; two requests at once. */
const FIXED: FalConfigOverrides = {
  concurrency: 2,
  generation: { queue_seconds: [1, 1] },
  models: { 'fal-ai/flux/dev': { seconds: [4, 4] } },
  retention: { result_seconds: 60, large_result_seconds: 60 },
};

async function setup(config: FalConfigOverrides = {}) {
  const clock = new ManualClock(Date.UTC(2026, 10, 26, 12));
  const merged: FalConfigOverrides = {
    ...FIXED,
    ...config,
    generation: { ...FIXED.generation, ...config.generation },
    models: { ...FIXED.models, ...config.models },
  };
  const emulator = await startFalEmulator({
    config: { host: '127.0.0.1', port: 0, ...merged },
    clock,
    log: (line) => {
      throw new Error(line);
    },
  });
  onTestFinished(() => emulator.close());
  const client = fal.createClient({
    baseUrl: emulator.url,
    apiKey: DEMO_FAL_KEY,
    now: () => clock.now(),
  }) as FalClient;
  onTestFinished(() => client.close());
  return { clock, emulator, client };
}

function mapped(fields: Partial<ItemRequest> = {}): ProviderRequest {
  const result = fal.mapRequest({
    prompt: 'a red chair',
    model: 'fal-ai/flux/dev',
    size: '1:1',
    resolution: '1K',
    n: 1,
    ...fields,
  });
  if ('problems' in result) throw new Error(JSON.stringify(result.problems));
  return result.request;
}

describe('fal client on the emulator', () => {
  it('follows a request from the queue to its stored images', async () => {
    const { clock, client } = await setup({ concurrency: 1 });
    const first = await client.submit(mapped({ n: 2 }));
    const second = await client.submit(mapped({ prompt: 'a blue chair' }));
    expect(first.ref).toMatch(/^[^|]+\|fal-ai\/flux\/requests\/[^|]+$/);
    expect(await client.lookupOne(second.ref)).toEqual({ status: 'pending', queuePosition: 1 });
    clock.advance(1_000);
    expect(await client.lookupOne(first.ref)).toEqual({ status: 'processing' });
    expect(await client.getTask(first.ref)).toEqual({ status: 'processing' });
    clock.advance(4_000);
    expect(await client.lookupOne(first.ref)).toEqual({ status: 'completed' });
    const result = await client.getTask(first.ref);
    expect(result).toMatchObject({ status: 'completed', expiresAt: clock.now() + 360_000 });
    expect(result.urls).toHaveLength(2);
    const image = await client.download(result.urls![0]!);
    const bytes: Buffer[] = [];
    for await (const chunk of image.body) bytes.push(chunk as Buffer);
    // JPEG, fal's default output_format.
    expect(Buffer.concat(bytes).subarray(0, 2).toString('hex')).toBe('ffd8');
    expect(client.stats()).toMatchObject({
      'POST /{model_id}': { calls: 2, failures: 0 },
      'GET {status_url}': { calls: 3, failures: 0 },
      // The early result call (400, still in progress) counts as a failed call.
      'GET {response_url}': { calls: 2, failures: 1 },
    });
  });

  it('follows a status stream to the moment the request ends, one call; a request fal does not know is expired', async () => {
    const { clock, client } = await setup({ concurrency: 1 });
    const task = await client.submit(mapped());
    let state: unknown;
    const following = client.followStatus(task.ref).then((s) => (state = s));
    // Queued, then running: the stream stays open, nothing final yet.
    clock.advance(1_000);
    clock.advance(3_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(state).toBeUndefined();
    clock.advance(1_000);
    await following;
    expect(state).toEqual({ status: 'completed' });
    expect(client.stats()['GET {status_url}/stream']).toEqual({ calls: 1, failures: 0 });
    const id = task.ref.split('|')[0]!;
    expect(await client.followStatus(task.ref.split(id).join('0'.repeat(id.length)))).toEqual({
      status: 'expired',
    });
    // The caller's signal ends a stream it no longer needs, with the caller's reason.
    const waiting = await client.submit(mapped({ prompt: 'a slow chair' }));
    const stop = new AbortController();
    const stopped = client.followStatus(waiting.ref, { signal: stop.signal });
    stop.abort(new Error('worker shutting down'));
    await expect(stopped).rejects.toThrow('worker shutting down');
  });

  it('a request not started within X-Fal-Request-Timeout ends as task_timeout, code aborted', async () => {
    const { clock, client } = await setup({ concurrency: 1 });
    await client.submit(mapped());
    const late = await client.submit(mapped({ prompt: 'a late chair' }), { startWithinMs: 3_000 });
    clock.advance(3_500);
    expect(await client.lookupOne(late.ref)).toEqual({ status: 'completed' });
    expect(await client.getTask(late.ref)).toMatchObject({
      status: 'failed',
      error: { type: 'task_timeout', code: 'aborted' },
    });
  });

  it('moderation: flagged images and a refused prompt are both content_policy_violation', async () => {
    const { clock, client } = await setup({
      models: {
        'fal-ai/flux/schnell': {
          seconds: [4, 4],
          max_images: 4,
          price_per_megapixel: 0,
          moderation: 'error',
        },
      },
    });
    const flagged = await client.submit(mapped({ prompt: 'a forbidden chair' }));
    const refused = await client.submit(mapped({ prompt: 'a forbidden lamp', model: 'fal-ai/flux/schnell' }));
    clock.advance(5_000);
    expect(await client.getTask(flagged.ref)).toMatchObject({
      status: 'failed',
      error: { type: 'content_policy_violation', code: 'has_nsfw_concepts' },
    });
    expect(await client.getTask(refused.ref)).toMatchObject({
      status: 'failed',
      error: { type: 'content_policy_violation', code: 'content_policy_violation' },
    });
  });

  it("a model's validation error is a generation_error naming the field", async () => {
    const { clock, client } = await setup({ generation: { validation_seconds: 1 } });
    const bad = await client.submit({ model: 'fal-ai/flux/dev', body: { prompt: 'x', num_images: 9 } });
    clock.advance(2_000);
    expect(await client.getTask(bad.ref)).toMatchObject({
      status: 'failed',
      error: {
        type: 'generation_error',
        code: 'less_than_equal',
        message: expect.stringMatching(/^num_images: /),
      },
    });
  });

  it('cancel: a queued request ends cancelled; a finished one needs nothing', async () => {
    const { clock, client } = await setup({ concurrency: 1 });
    const running = await client.submit(mapped());
    const queued = await client.submit(mapped({ prompt: 'a queued chair' }));
    await client.cancel(queued.ref);
    expect(await client.lookupOne(queued.ref)).toEqual({ status: 'completed' });
    expect(await client.getTask(queued.ref)).toMatchObject({
      status: 'failed',
      error: { type: 'cancelled', code: 'client_cancelled' },
    });
    clock.advance(5_000);
    await client.cancel(running.ref);
    expect(await client.getTask(running.ref)).toMatchObject({ status: 'completed' });
  });

  it('a result past its retention is expired', async () => {
    const { clock, client } = await setup();
    const task = await client.submit(mapped());
    clock.advance(5_000 + 60_000);
    expect(await client.getTask(task.ref)).toEqual({ status: 'expired' });
  });

  it("errors: a wrong key is AuthenticationError; the emulator's injected 5xx a retryable ServerError", async () => {
    const { emulator, clock, client } = await setup({
      faults: { server_error_rates: { result: 1 } },
    });
    const stranger = fal.createClient({ baseUrl: emulator.url, apiKey: 'not-a-key' });
    onTestFinished(() => stranger.close());
    expect(await rejection(stranger.submit(mapped()))).toBeInstanceOf(AuthenticationError);
    const task = await client.submit(mapped());
    clock.advance(5_000);
    const error = await rejection(client.getTask(task.ref));
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ retryable: true });
  });
});

describe('fal webhooks from the emulator', () => {
  async function receiver(clock: ManualClock, jwksUrl: string) {
    const signals: TaskFinishedSignal[] = [];
    const running = await startWebhookServer({
      verifierFor: (provider) => (provider === 'fal' ? falWebhookVerifier({ jwksUrl }) : undefined),
      signal: async (_workflowId, task) => {
        signals.push(task);
        return 'signalled';
      },
      now: () => clock.now(),
      log: () => {},
    });
    onTestFinished(() => running.close());
    return {
      running,
      signals,
      webhook: `${running.url}/hooks/fal/${encodeURIComponent('pixelmill/chairs/shard-0001')}`,
    };
  }

  it('delivers the result, signed, into the receiver: the shard gets the URLs without a result call', async () => {
    const { clock, emulator, client } = await setup();
    const { running, signals, webhook } = await receiver(clock, emulator.jwksUrl);
    const task = await client.submit(mapped({ n: 2 }), { webhook });
    clock.advance(5_000);
    await waitUntil('the signal', () => signals.length === 1, 10_000, 5);
    expect(signals[0]).toMatchObject({ taskId: task.ref.split('|')[0], status: 'completed' });
    expect(signals[0]?.urls).toHaveLength(2);
    expect(running.counts).toMatchObject({ signalled: 1, unauthorized: 0 });
  });

  it('rotated keys verify; a payload fal could not serialize is signalled without URLs (the result is fetched)', async () => {
    const { clock, emulator, client } = await setup({
      webhooks: { rotated: true, payload_error_rate: 1 },
    });
    const { signals, webhook } = await receiver(clock, emulator.jwksUrl);
    const task = await client.submit(mapped(), { webhook });
    clock.advance(5_000);
    await waitUntil('the signal', () => signals.length === 1, 10_000, 5);
    expect(signals[0]).toEqual({ taskId: task.ref.split('|')[0], status: 'completed' });
    expect(await client.getTask(task.ref)).toMatchObject({ status: 'completed' });
  });

  it('an ERROR webhook carries the failure; a forged delivery is refused', async () => {
    const { clock, emulator, client } = await setup({ generation: { validation_seconds: 1 } });
    const { running, signals, webhook } = await receiver(clock, emulator.jwksUrl);
    await client.submit({ model: 'fal-ai/flux/dev', body: { prompt: 42 } }, { webhook });
    clock.advance(2_000);
    await waitUntil('the signal', () => signals.length === 1, 10_000, 5);
    expect(signals[0]).toMatchObject({
      status: 'failed',
      error: { type: 'generation_error', code: 'string_type' },
    });
    const forged = await request(webhook, {
      method: 'POST',
      body: JSON.stringify({
        request_id: 'x',
        status: 'OK',
        payload: { images: [{ url: 'https://evil.example/x' }] },
      }),
      headers: {
        'x-fal-webhook-request-id': 'x',
        'x-fal-webhook-user-id': 'user_demo',
        'x-fal-webhook-timestamp': String(Math.floor(clock.now() / 1000)),
        'x-fal-webhook-signature': 'ab'.repeat(64),
      },
    });
    await forged.body.dump();
    expect(forged.statusCode).toBe(401);
    expect(running.counts.unauthorized).toBe(1);
  });
});
