// Webhook delivery by the emulator (spec part 6) against real receivers on 127.0.0.1, port 0:
// signature, retry schedule and classification, duplicates, hostile receivers, and close().
// time_scale 0.001 turns the 10/30/60 s schedule into 10/30/60 ms; no assertion is on speed.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  WebhookConfigError,
  WebhookSender,
  callbackUrlFor,
  signWebhookBody,
  type WebhookAttempt,
} from '../emulator/apimart/webhooks.js';
import { ManualClock } from './support/emulator.js';
import { startLoopbackServer } from './support/loopback-server.js';

const SECRET = 'whsec_test_secret';
const BODY = JSON.stringify({
  id: 'task_1',
  status: 'completed',
  result: { url: ['http://x/1.png'] },
  note: 'ünïcödé',
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Received {
  at: number;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** A receiver answering the n-th request (0-based) with `respond(n, res)`; it may also never answer. */
async function startReceiver(respond: (n: number, res: ServerResponse) => void) {
  const received: Received[] = [];
  const server = await startLoopbackServer((req, res, body) => {
    received.push({ at: performance.now(), url: req.url ?? '', headers: req.headers, body });
    respond(received.length - 1, res);
  });
  cleanups.push(server.close);
  return { callbackUrl: callbackUrlFor(`${server.origin}/hooks`), received };
}

const statuses =
  (...codes: number[]) =>
  (n: number, res: ServerResponse) =>
    res.writeHead(codes[Math.min(n, codes.length - 1)] ?? 200).end('ok');

interface SenderOptions {
  timeScale?: number;
  duplicateRate?: number;
  minAttemptTimeoutMs?: number;
  onAttempt?: (a: WebhookAttempt) => void;
}

function startSender(options: SenderOptions = {}) {
  const attempts: WebhookAttempt[] = [];
  const sender = new WebhookSender({
    timeScale: options.timeScale ?? 0.001,
    duplicateRate: options.duplicateRate ?? 0,
    random: () => 0.5,
    ...(options.minAttemptTimeoutMs === undefined
      ? {}
      : { minAttemptTimeoutMs: options.minAttemptTimeoutMs }),
    onAttempt: (attempt) => {
      attempts.push(attempt);
      options.onAttempt?.(attempt);
    },
  });
  cleanups.push(() => sender.close());
  return { sender, attempts };
}

const outcomes = (attempts: WebhookAttempt[]) => attempts.map((a) => `${a.attempt}:${a.outcome}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('callbackUrlFor', () => {
  it.each([
    ['http://127.0.0.1:9000', 'http://127.0.0.1:9000/callback'],
    ['http://h.test/hooks', 'http://h.test/hooks/callback'],
    ['http://h.test/hooks/', 'http://h.test/hooks/callback'],
    ['https://h.test/a//', 'https://h.test/a/callback'],
    ['http://h.test/hooks?tenant=7&x=1', 'http://h.test/hooks/callback?tenant=7&x=1'],
    ['http://h.test/hooks/?t=1#frag', 'http://h.test/hooks/callback?t=1'],
  ])('%s -> %s', (webhook, expected) => {
    expect(callbackUrlFor(webhook)).toBe(expected);
  });

  it('rejects a malformed address with a typed error', () => {
    expect(() => callbackUrlFor('not a url')).toThrow(WebhookConfigError);
  });
});

describe('WebhookSender', () => {
  it('posts the raw body with a signature the receiver can verify', async () => {
    const receiver = await startReceiver(statuses(200));
    const { sender, attempts } = startSender();
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 'task_1', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts).toHaveLength(1));
    const [request] = receiver.received;
    expect(request?.url).toBe('/hooks/callback');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.body.toString('utf8')).toBe(BODY);
    const expected = createHmac('sha256', SECRET)
      .update(request?.body ?? Buffer.alloc(0))
      .digest();
    const signature = Buffer.from(String(request?.headers['x-webhook-signature']), 'hex');
    expect(signature.length).toBe(32);
    expect(timingSafeEqual(signature, expected)).toBe(true);
    expect(signWebhookBody(BODY, SECRET)).toBe(expected.toString('hex'));
    expect(attempts).toEqual([{ taskId: 'task_1', attempt: 1, outcome: 'delivered', status: 200 }]);
  });

  it('omits the signature header when the secret is empty', async () => {
    const receiver = await startReceiver(statuses(204));
    const { sender, attempts } = startSender();
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: '' });
    await vi.waitFor(() => expect(attempts).toHaveLength(1));
    expect(receiver.received[0]?.headers).not.toHaveProperty('x-webhook-signature');
    expect(attempts[0]?.outcome).toBe('delivered');
  });

  it('retries a 500 exactly 3 times, with growing gaps, then gives up', async () => {
    const receiver = await startReceiver(statuses(500));
    // 0.01: gaps of 100, 300 and 600 ms, far enough apart to order reliably.
    const { sender, attempts } = startSender({ timeScale: 0.01 });
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts.at(-1)?.outcome).toBe('gave_up'), { timeout: 10_000 });
    expect(outcomes(attempts)).toEqual([
      '1:retryable_failure',
      '2:retryable_failure',
      '3:retryable_failure',
      '4:retryable_failure',
      '4:gave_up',
    ]);
    expect(attempts.slice(0, 4).map((a) => a.status)).toEqual([500, 500, 500, 500]);
    expect(receiver.received).toHaveLength(4);
    const at = receiver.received.map((r) => r.at);
    const gaps = [1, 2, 3].map((i) => (at[i] ?? 0) - (at[i - 1] ?? 0));
    expect(gaps[1]).toBeGreaterThan(gaps[0] ?? Infinity);
    expect(gaps[2]).toBeGreaterThan(gaps[1] ?? Infinity);
    // Identical retries: the receiver can de-duplicate and verify each one.
    expect(
      new Set(receiver.received.map((r) => r.body.toString() + r.headers['x-webhook-signature'])).size,
    ).toBe(1);
  });

  it('retries a 429 and stops at the first 2xx', async () => {
    const receiver = await startReceiver(statuses(429, 503, 202));
    const { sender, attempts } = startSender();
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts.at(-1)?.outcome).toBe('delivered'));
    await sleep(200); // 20 times the first retry gap: a wrong retry would have shown by now
    expect(outcomes(attempts)).toEqual(['1:retryable_failure', '2:retryable_failure', '3:delivered']);
    expect(attempts.map((a) => a.status)).toEqual([429, 503, 202]);
    expect(receiver.received).toHaveLength(3);
  });

  it('retries an attempt the receiver never answers, after the scaled 10 s timeout', async () => {
    const receiver = await startReceiver((n, res) => {
      if (n > 0) res.writeHead(200).end();
    });
    // No floor: the timeout is exactly 10 s x 0.02 = 200 ms, ample for the answered retry.
    const { sender, attempts } = startSender({ timeScale: 0.02, minAttemptTimeoutMs: 0 });
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts.at(-1)?.outcome).toBe('delivered'));
    expect(attempts[0]).toEqual({ taskId: 't', attempt: 1, outcome: 'retryable_failure', error: 'timeout' });
    expect(outcomes(attempts)).toEqual(['1:retryable_failure', '2:delivered']);
  });

  it('by default keeps the attempt timeout at 1 s or more under tiny time scales', async () => {
    const receiver = await startReceiver(() => undefined);
    const { sender, attempts } = startSender({ timeScale: 0.001 });
    const sentAt = performance.now();
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts).toHaveLength(1), { timeout: 10_000 });
    expect(attempts[0]?.error).toBe('timeout');
    // A lower bound only (timers never fire early by more than rounding): 10 ms would fail it.
    expect(performance.now() - sentAt).toBeGreaterThan(900);
  });

  it.each([400, 401, 404, 410, 301])('does not retry a %i', async (status) => {
    const receiver = await startReceiver(statuses(status));
    const { sender, attempts } = startSender();
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts).toHaveLength(1));
    await sleep(200);
    expect(attempts).toEqual([{ taskId: 't', attempt: 1, outcome: 'rejected', status }]);
    expect(receiver.received).toHaveLength(1);
  });

  it('with duplicateRate 1 delivers exactly twice, identically', async () => {
    const receiver = await startReceiver(statuses(200));
    const { sender, attempts } = startSender({ duplicateRate: 1 });
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts).toHaveLength(2));
    await sleep(200);
    expect(attempts).toEqual([
      { taskId: 't', attempt: 1, outcome: 'delivered', status: 200 },
      { taskId: 't', attempt: 2, outcome: 'delivered', status: 200, duplicate: true },
    ]);
    const [first, second] = receiver.received;
    expect(receiver.received).toHaveLength(2);
    expect(second?.body).toEqual(first?.body);
    expect(second?.headers['x-webhook-signature']).toBe(first?.headers['x-webhook-signature']);
  });

  it('marks every attempt of a duplicate delivery, a failed one too, and never retries it', async () => {
    const receiver = await startReceiver(statuses(200, 500));
    const clock = new ManualClock();
    const attempts: WebhookAttempt[] = [];
    const sender = new WebhookSender({
      timeScale: 1,
      duplicateRate: 1,
      random: () => 0.5,
      clock,
      onAttempt: (attempt) => attempts.push(attempt),
    });
    cleanups.push(() => sender.close());
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts).toHaveLength(2));
    expect(attempts).toEqual([
      { taskId: 't', attempt: 1, outcome: 'delivered', status: 200 },
      { taskId: 't', attempt: 2, outcome: 'retryable_failure', status: 500, duplicate: true },
    ]);
    // No retry is scheduled (nor an attempt timeout left behind).
    expect(clock.pendingTimes()).toEqual([]);
  });

  it('survives receivers that reset, answer garbage or are not there', async () => {
    const reset = await startReceiver((_n, res) => res.socket?.destroy());
    const garbage = await startRawServer('garbage\r\n\r\n');
    const refused = await startRawServer('');
    const refusedUrl = `http://127.0.0.1:${(refused.address() as AddressInfo).port}/callback`;
    await new Promise((resolve) => refused.close(resolve));
    const { sender, attempts } = startSender({
      onAttempt: () => {
        throw new Error('a broken observer');
      },
    });
    const targets = {
      reset: reset.callbackUrl,
      garbage: `http://127.0.0.1:${(garbage.address() as AddressInfo).port}/callback`,
      refused: refusedUrl,
    };
    for (const [taskId, callbackUrl] of Object.entries(targets))
      sender.send({ callbackUrl, taskId, body: BODY, secret: SECRET });
    sender.send({ callbackUrl: 'ftp://127.0.0.1/callback', taskId: 'ftp', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts.filter((a) => a.outcome === 'gave_up')).toHaveLength(3), {
      timeout: 10_000,
    });
    for (const taskId of Object.keys(targets)) {
      const mine = attempts.filter((a) => a.taskId === taskId);
      expect(outcomes(mine)).toEqual([
        '1:retryable_failure',
        '2:retryable_failure',
        '3:retryable_failure',
        '4:retryable_failure',
        '4:gave_up',
      ]);
      expect(mine[0]?.error).toMatch(/^\w+$/);
    }
    expect(attempts.filter((a) => a.taskId === 'ftp').map((a) => a.outcome)).toEqual(['rejected']);
    expect(JSON.stringify(attempts)).not.toContain(SECRET);
  });

  it('close() cancels a pending retry: no further attempt arrives', async () => {
    const receiver = await startReceiver(statuses(500, 200));
    // 0.02: the first retry would come 200 ms after the failure.
    const { sender, attempts } = startSender({ timeScale: 0.02 });
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(attempts).toHaveLength(1));
    await sender.close();
    await sleep(500);
    expect(receiver.received).toHaveLength(1);
    expect(attempts).toHaveLength(1);
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 'late', body: BODY, secret: SECRET });
    await sleep(50);
    expect(receiver.received).toHaveLength(1);
  });

  it('close() aborts an attempt the receiver is holding and resolves', async () => {
    const receiver = await startReceiver(() => undefined);
    // time scale 1: the attempt timeout would be 10 s; close() must not wait for it.
    const { sender, attempts } = startSender({ timeScale: 1 });
    sender.send({ callbackUrl: receiver.callbackUrl, taskId: 't', body: BODY, secret: SECRET });
    await vi.waitFor(() => expect(receiver.received).toHaveLength(1));
    await sender.close();
    expect(attempts).toEqual([]);
  });

  it('rejects invalid options with a typed error', () => {
    expect(() => new WebhookSender({ timeScale: 0, duplicateRate: 0, random: Math.random })).toThrow(
      WebhookConfigError,
    );
    expect(() => new WebhookSender({ timeScale: 1, duplicateRate: 1.5, random: Math.random })).toThrow(
      WebhookConfigError,
    );
  });
});

/** A TCP server that answers every connection with `reply` and closes it. */
async function startRawServer(reply: string): Promise<TcpServer> {
  const server = createTcpServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => socket.end(reply));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return server;
}
