// The terminal-state webhook as the emulator sends it: to {webhook}/callback at the terminal
// moment, the Task object as body in the submit language, signed with the account's secret
// (no header when the secret is empty), retried on 5xx, counted in stats.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { call, startTestEmulator } from './support/emulator.js';

interface Received {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A receiver on 127.0.0.1:0 answering the n-th request with statuses[n] (200 after the list). */
async function startReceiver(statuses: number[] = []) {
  const received: Received[] = [];
  const waiters: (() => void)[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body });
      res.writeHead(statuses[received.length - 1] ?? 200).end();
      waiters.splice(0).forEach((wake) => wake());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/pixelmill`;
  const until = async (count: number): Promise<Received[]> => {
    while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    return received;
  };
  return { base, received, until };
}

const accounts = [
  { id: 'acct_signed', webhook_secret: 'whsec_signed', keys: [{ key: 'sk-signed' }] },
  { id: 'acct_plain', webhook_secret: '', keys: [{ key: 'sk-plain' }] },
];
const quick = {
  time_scale: 0.001,
  accounts,
  generation: { queue_seconds: [1, 1] as [number, number], seconds: { '1K': [5, 5] as [number, number] } },
};

describe('webhooks from the emulator', () => {
  it('posts the completed Task to {webhook}/callback, signed with the account secret', async () => {
    const receiver = await startReceiver();
    const emulator = await startTestEmulator(quick);
    const id = (
      await call(emulator.url, '/v1/images/generations', {
        key: 'sk-signed',
        body: { prompt: 'hooked', webhook: receiver.base },
      })
    ).json.data[0].task_id;
    const [delivery] = await receiver.until(1);
    expect(delivery!.url).toBe('/hooks/pixelmill/callback');
    expect(delivery!.headers['content-type']).toMatch(/^application\/json/);
    expect(delivery!.headers['x-webhook-signature']).toBe(
      createHmac('sha256', 'whsec_signed').update(delivery!.body).digest('hex'),
    );
    const task = JSON.parse(delivery!.body);
    expect(task).toMatchObject({ id, status: 'completed', progress: '100%', credits_cost: 1 });
    expect(task.code).toBeUndefined();
    // The body is exactly what GET returns as data.
    const got = await call(emulator.url, `/v1/tasks/${id}`, { key: 'sk-signed' });
    expect(got.json.data).toEqual(task);
    await expect.poll(() => emulator.stats().webhooks.delivered).toBe(1);
  });

  it('omits the signature for an empty secret and writes a failure in the submit language', async () => {
    const receiver = await startReceiver();
    const emulator = await startTestEmulator(quick);
    await call(emulator.url, '/v1/images/generations', {
      key: 'sk-plain',
      body: { prompt: 'forbidden thing', webhook: receiver.base, language: 'ja' },
    });
    const [delivery] = await receiver.until(1);
    expect(delivery!.headers['x-webhook-signature']).toBeUndefined();
    const task = JSON.parse(delivery!.body);
    expect(task).toMatchObject({
      status: 'failed',
      credits_cost: 0,
      error: { code: 'content_blocked', param: 'prompt' },
    });
    expect(task.error.message).toBe(
      'プロンプトはコンテンツポリシーにより拒否されました。クレジットは請求されていません。',
    );
  });

  it('retries a 503 and a 429, not a 400; sends nothing for tasks without webhook', async () => {
    const retried = await startReceiver([503, 429]);
    const refused = await startReceiver([400]);
    const emulator = await startTestEmulator(quick);
    const submit = (body: object) =>
      call(emulator.url, '/v1/images/generations', { key: 'sk-signed', body: { prompt: 'p', ...body } });
    await submit({ webhook: retried.base });
    await submit({ webhook: refused.base });
    await submit({});
    const attempts = await retried.until(3);
    expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
    await expect
      .poll(() => emulator.stats().webhooks)
      .toEqual({ delivered: 1, retryable_failure: 2, rejected: 1, gave_up: 0 });
    expect(refused.received).toHaveLength(1);
  });
});
