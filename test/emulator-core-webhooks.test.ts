// Webhook delivery in emulator/core against real receivers on 127.0.0.1 port 0: the body byte for
// byte, headers computed per attempt, the retry schedule on a manual clock, which answers are
// retried, lost and duplicate faults, timeouts, close(); and JobEndTimers firing at a job's end,
// re-armed when a cancel moves it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  JobEndTimers,
  JobSimulator,
  WebhookDispatcher,
  type WebhookAttempt,
} from '../emulator/core/index.js';
import { randomStream } from '../emulator/core/random-streams.js';
import { ManualClock } from './support/emulator.js';
import { startLoopbackServer } from './support/loopback-server.js';
import { waitUntil } from './support/wait.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

async function startReceiver(respond: (n: number, res: ServerResponse) => void) {
  const received: Received[] = [];
  const server = await startLoopbackServer((req, res, body) => {
    received.push({ headers: req.headers, body: body.toString('utf8') });
    respond(received.length - 1, res);
  });
  cleanups.push(server.close);
  return { url: `${server.origin}/hook?x=1`, received };
}

const statuses =
  (...codes: number[]) =>
  (n: number, res: ServerResponse) =>
    res.writeHead(codes[Math.min(n, codes.length - 1)] ?? 200).end('ok');

function dispatcher(options: Partial<ConstructorParameters<typeof WebhookDispatcher>[0]> = {}) {
  const clock = new ManualClock();
  const attempts: WebhookAttempt[] = [];
  const sender = new WebhookDispatcher({
    clock,
    timeScale: 1,
    retryDelaysSeconds: [10, 20],
    attemptTimeoutSeconds: 15,
    retryOn: 'any_failure',
    duplicateRate: 0,
    lostRate: 0,
    random: () => 0.5,
    onAttempt: (attempt) => attempts.push(attempt),
    ...options,
  });
  cleanups.push(() => sender.close());
  return { clock, attempts, sender };
}

const BODY = '{"request_id": "r1", "payload": {"note": "ünïcödé"}}';

describe('WebhookDispatcher', () => {
  it('posts the body byte for byte, with headers computed for each attempt', async () => {
    const receiver = await startReceiver(statuses(200));
    const { attempts, sender } = dispatcher();
    sender.send({ url: receiver.url, jobId: 'r1', body: BODY, headers: (n) => ({ 'x-attempt': String(n) }) });
    await waitUntil('the delivery', () => attempts.length === 1, 10_000, 5);
    expect(receiver.received[0]!.body).toBe(BODY);
    expect(receiver.received[0]!.headers['x-attempt']).toBe('1');
    expect(receiver.received[0]!.headers['content-type']).toBe('application/json');
    expect(attempts).toEqual([{ jobId: 'r1', attempt: 1, outcome: 'delivered', status: 200 }]);
  });

  it('retries on the scaled schedule, then gives up', async () => {
    const receiver = await startReceiver(statuses(500));
    const { clock, attempts, sender } = dispatcher({ timeScale: 0.5 });
    sender.send({ url: receiver.url, jobId: 'r1', body: BODY, headers: (n) => ({ 'x-attempt': String(n) }) });
    await waitUntil('attempt 1', () => attempts.length === 1, 10_000, 5);
    expect(clock.pendingTimes()[0]! - clock.now()).toBe(5_000);
    clock.advance(5_000);
    await waitUntil('attempt 2', () => attempts.length === 2, 10_000, 5);
    expect(clock.pendingTimes()[0]! - clock.now()).toBe(10_000);
    clock.advance(10_000);
    await waitUntil('attempt 3 and giving up', () => attempts.length === 4, 10_000, 5);
    expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'retryable_failure'],
      [2, 'retryable_failure'],
      [3, 'retryable_failure'],
      [3, 'gave_up'],
    ]);
    expect(receiver.received.map((r) => r.headers['x-attempt'])).toEqual(['1', '2', '3']);
  });

  it('retries a 4xx when told to retry any failure, and rejects it when only server errors are', async () => {
    const receiver = await startReceiver(statuses(400, 200));
    const any = dispatcher();
    any.sender.send({ url: receiver.url, jobId: 'a', body: BODY, headers: () => ({}) });
    await waitUntil('attempt 1', () => any.attempts.length === 1, 10_000, 5);
    any.clock.advance(10_000);
    await waitUntil('attempt 2', () => any.attempts.length === 2, 10_000, 5);
    expect(any.attempts.map((a) => a.outcome)).toEqual(['retryable_failure', 'delivered']);

    const strict = dispatcher({ retryOn: 'server_errors' });
    const refusing = await startReceiver(statuses(400));
    strict.sender.send({ url: refusing.url, jobId: 'b', body: BODY, headers: () => ({}) });
    await waitUntil('attempt', () => strict.attempts.length === 1, 10_000, 5);
    expect(strict.attempts[0]!.outcome).toBe('rejected');
    expect(strict.clock.pendingTimes()).toEqual([]);
  });

  it('loses a webhook (never sent) and duplicates a delivered one, by rate', async () => {
    const receiver = await startReceiver(statuses(200));
    const lost = dispatcher({ lostRate: 1 });
    lost.sender.send({ url: receiver.url, jobId: 'l', body: BODY, headers: () => ({}) });
    expect(lost.attempts).toEqual([{ jobId: 'l', attempt: 1, outcome: 'lost' }]);

    const dup = dispatcher({ duplicateRate: 1 });
    dup.sender.send({ url: receiver.url, jobId: 'd', body: BODY, headers: () => ({}) });
    await waitUntil('both deliveries', () => dup.attempts.length === 2, 10_000, 5);
    expect(dup.attempts.map((a) => a.outcome)).toEqual(['delivered', 'duplicate_delivered']);
    expect(dup.attempts.map((a) => a.duplicate)).toEqual([undefined, true]);
    expect(receiver.received.map((r) => r.body)).toEqual([BODY, BODY]);
  });

  it('times an attempt out on the clock and retries it', async () => {
    const receiver = await startReceiver((n, res) => {
      if (n > 0) res.writeHead(200).end();
    });
    const { clock, attempts, sender } = dispatcher({ attemptTimeoutSeconds: 15, minAttemptTimeoutMs: 0 });
    sender.send({ url: receiver.url, jobId: 't', body: BODY, headers: () => ({}) });
    await waitUntil('the request', () => receiver.received.length === 1, 10_000, 5);
    clock.advance(15_000);
    await waitUntil('the timeout', () => attempts.length === 1, 10_000, 5);
    expect(attempts[0]).toMatchObject({ outcome: 'retryable_failure', error: 'timeout' });
    clock.advance(10_000);
    await waitUntil('the retry', () => attempts.length === 2, 10_000, 5);
    expect(attempts[1]!.outcome).toBe('delivered');
  });

  it('cancels pending retries on close', async () => {
    const receiver = await startReceiver(statuses(503));
    const { clock, attempts, sender } = dispatcher();
    sender.send({ url: receiver.url, jobId: 'c', body: BODY, headers: () => ({}) });
    await waitUntil('attempt 1', () => attempts.length === 1, 10_000, 5);
    await sender.close();
    clock.advance(60_000);
    sender.send({ url: receiver.url, jobId: 'after', body: BODY, headers: () => ({}) });
    expect(receiver.received).toHaveLength(1);
  });
});

describe('JobEndTimers', () => {
  it('fires at the end of each job, again after a cancel moved it, never for a stuck job', () => {
    const clock = new ManualClock(0);
    const sim = new JobSimulator({ clock, timeScale: 1, random: randomStream(1, 0), concurrency: 1 });
    const fired: [string, number][] = [];
    const timers = new JobEndTimers(clock, (job: { id: string }) => fired.push([job.id, clock.now()]));
    sim.onReschedule = (jobs) => timers.rearm(jobs);
    const base = {
      account: 'a',
      queueSeconds: [0, 0] as const,
      runSeconds: [10, 10] as const,
      failureRate: 0,
      moderated: false,
      retentionSeconds: 60,
      data: null,
    };
    const stuck = sim.submit({ ...base, id: 'stuck', stuckRate: 1 });
    const next = sim.submit({ ...base, id: 'next', stuckRate: 0 });
    const other = sim.submit({ ...base, id: 'other', account: 'b', stuckRate: 0 });
    for (const job of [stuck, next, other]) timers.watch(job);
    clock.advance(30_000);
    expect(fired).toEqual([['other', 10_000]]);
    sim.cancel(stuck);
    clock.advance(5_000);
    expect(fired).toEqual([
      ['other', 10_000],
      ['stuck', 30_000],
    ]);
    clock.advance(5_000);
    expect(fired.at(-1)).toEqual(['next', 40_000]);
    clock.advance(100_000);
    expect(fired).toHaveLength(3);
    timers.close();
  });
});
