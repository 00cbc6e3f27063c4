// Replicate's webhooks end to end: the emulator delivers a prediction's `completed` webhook to
// pixelmill's receiver (webhook/server.ts) with the Replicate verifier, its secret fetched from the
// emulator's GET /v1/webhooks/default/secret; the shard is signalled once with the result. Forged
// and stale deliveries are refused (401), a replay of a genuine one is acknowledged as a duplicate.
import { createHmac } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TaskFinishedSignal } from '../common/types.js';
import { DEMO_WEBHOOK_SECRET } from '../emulator/replicate/index.js';
import { replicate, ReplicateClient, replicateSecretFetcher } from '../providers/replicate/index.js';
import { startWebhookServer } from '../webhook/server.js';
import { receiverVerifiers } from '../webhook/verifiers.js';
import { ManualClock, startReplicate, T0, TOKEN } from './emulator-replicate-helpers.js';

const SHARD = 'pixelmill/catalog/shard-0001';

async function setup() {
  const clock = new ManualClock(T0);
  const emulator = await startReplicate({ generation: { queue_seconds: 1, run_seconds: 2 } }, { clock });
  const signals: TaskFinishedSignal[] = [];
  const waiters: (() => void)[] = [];
  const receiver = await startWebhookServer({
    signal: async (workflowId, task) => {
      expect(workflowId).toBe(SHARD);
      signals.push(task);
      waiters.splice(0).forEach((wake) => wake());
      return 'signalled';
    },
    verifierFor: receiverVerifiers(
      {
        extra: {
          replicate: { fetchSecret: replicateSecretFetcher({ baseUrl: emulator.url, apiKey: TOKEN }) },
        },
      },
      ['replicate'],
    ),
    now: () => clock.now(),
    log: () => {},
  });
  onTestFinished(() => receiver.close());
  const client = new ReplicateClient({ baseUrl: emulator.url, apiKey: TOKEN });
  onTestFinished(() => client.close());
  const hook = `${receiver.url}/hooks/replicate/${encodeURIComponent(SHARD)}`;
  const signalled = async (count: number) => {
    while (signals.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    return signals;
  };
  return { clock, emulator, receiver, client, hook, signalled };
}

function signed(
  body: string,
  id: string,
  seconds: number,
  secret = DEMO_WEBHOOK_SECRET,
): Record<string, string> {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': `v1,${createHmac('sha256', key).update(`${id}.${seconds}.${body}`).digest('base64')}`,
  };
}

const post = (url: string, body: string, headers: Record<string, string>) =>
  fetch(url, { method: 'POST', body, headers }).then((answer) => answer.status);

describe('webhooks from the emulator', () => {
  it('signal the shard once, with the completed prediction and its URLs', async () => {
    const { clock, receiver, client, hook, signalled } = await setup();
    const mapped = replicate.mapRequest({
      prompt: 'a fox',
      model: 'black-forest-labs/flux-schnell',
      size: '1:1',
      resolution: '1K',
      n: 2,
    });
    if ('problems' in mapped) throw new Error('unexpected problems');
    const { ref } = await client.submit(mapped.request, { webhook: hook });
    clock.advance(3000);
    const [signal] = await signalled(1);
    expect(signal).toEqual({
      taskId: ref,
      status: 'completed',
      urls: [expect.stringContaining('/delivery/'), expect.stringContaining('/delivery/')],
      expiresAt: T0 + 3000 + 3_600_000,
    });
    // Only the completed event was asked for: nothing else arrived (closing lets answers finish).
    await receiver.close();
    expect(receiver.counts).toMatchObject({ signalled: 1, ignored: 0, unauthorized: 0, bad_request: 0 });
  });

  it('refuse forged and stale deliveries, and take a replay as a duplicate', async () => {
    const { clock, receiver, hook } = await setup();
    const body = JSON.stringify({
      id: 'p00000000000000000000000001',
      status: 'succeeded',
      created_at: new Date(T0).toISOString(),
      completed_at: new Date(T0).toISOString(),
      output: ['https://replicate.delivery/x/out-0.webp'],
      error: null,
      data_removed: false,
    });
    const now = Math.floor(clock.now() / 1000);
    const forged = signed(body, 'msg_forged', now, `whsec_${Buffer.from('not the key').toString('base64')}`);
    expect(await post(hook, body, forged)).toBe(401);
    expect(await post(hook, body, signed(body, 'msg_stale', now - 6 * 60))).toBe(401);
    const genuine = signed(body, 'msg_genuine', now);
    expect(await post(hook, body, genuine)).toBe(200);
    expect(await post(hook, body, genuine)).toBe(200);
    expect(receiver.counts).toMatchObject({ unauthorized: 2, signalled: 1, duplicate: 1 });
  });
});
