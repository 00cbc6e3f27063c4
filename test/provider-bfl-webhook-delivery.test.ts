// BFL webhooks end to end: the emulator delivers a task's end to pixelmill's webhook receiver
// (webhook/server.ts with the BFL verifier from receiverVerifiers), for each reading the emulator
// has as a knob (get_result's body or the smaller notice; X-BFL-Signature, the secret echoed, or
// nothing), and the receiver signals the shard once, refusing what is not authentic.
import { describe, expect, it, onTestFinished } from 'vitest';
import { shardWorkflowId, runWorkflowId } from '../common/names.js';
import type { TaskFinishedSignal } from '../common/types.js';
import { taskIdOf } from '../common/task-ref.js';
import type { BflConfigOverrides } from '../emulator/bfl/index.js';
import { bfl } from '../providers/bfl/index.js';
import { startWebhookServer } from '../webhook/server.js';
import { receiverVerifiers } from '../webhook/verifiers.js';
import { DEMO_BFL_KEY, fixed, ManualClock, startTestBfl } from './support/emulator-bfl.js';

const SECRET = 'bfl-receiver-secret-42';
const SHARD = shardWorkflowId(runWorkflowId('bfl-hooks'), 0);

/** Waits for deliveries in flight over loopback (the receiver has no event to wait on). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setImmediate(resolve));
}

async function setup(config: BflConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestBfl(fixed(config), { clock });
  const signals: TaskFinishedSignal[] = [];
  const receiver = await startWebhookServer({
    signal: async (workflowId, task) => {
      expect(workflowId).toBe(SHARD);
      signals.push(task);
      return 'signalled';
    },
    verifierFor: receiverVerifiers({ secret: SECRET }, ['bfl']),
    now: () => clock.now(),
    log: () => {},
  });
  onTestFinished(() => receiver.close());
  const client = bfl.createClient({ baseUrl: emulator.url, apiKey: DEMO_BFL_KEY, now: () => clock.now() });
  onTestFinished(() => client.close());
  const webhook = `${receiver.url}/hooks/bfl/${encodeURIComponent(SHARD)}`;
  /** Resolves once the receiver has answered `count` deliveries. */
  const answered = (count: number) =>
    until(() => Object.values(receiver.counts).reduce((sum, n) => sum + n, 0) >= count);
  return { clock, emulator, receiver, client, webhook, signals, answered };
}

describe('BFL webhooks into the receiver', () => {
  it("get_result's body signed with X-BFL-Signature: signalled once, with the sample URL", async () => {
    const { clock, receiver, client, webhook, signals, answered } = await setup({
      faults: { webhook_duplicate_rate: 1 },
    });
    const t0 = clock.now();
    const task = await client.submit(
      { model: 'flux-pro-1.1', body: { prompt: 'a hooked chair' } },
      { webhook, webhookSecret: SECRET },
    );
    clock.advance(12_000);
    await answered(2);
    expect(signals).toEqual([
      {
        taskId: taskIdOf(task.ref),
        status: 'completed',
        urls: [expect.stringContaining('/sample.jpeg?')],
        expiresAt: t0 + 12_000 + 600_000,
      },
    ]);
    // The duplicate delivery is authentic and harmless.
    expect(receiver.counts).toMatchObject({ signalled: 1, duplicate: 1, unauthorized: 0 });
  });

  it('the smaller notice with the secret echoed in X-Webhook-Secret: a moderated task, failed', async () => {
    const { clock, receiver, client, webhook, signals, answered } = await setup({
      webhooks: { payload: 'notice', signature: 'secret_header' },
    });
    const task = await client.submit(
      { model: 'flux-pro-1.1', body: { prompt: 'a forbidden chair' } },
      { webhook, webhookSecret: SECRET },
    );
    clock.advance(2_000);
    await answered(1);
    expect(signals).toEqual([
      {
        taskId: taskIdOf(task.ref),
        status: 'failed',
        error: {
          type: 'content_policy_violation',
          code: 'Request Moderated',
          message: "BFL's moderation refused the request",
        },
        creditsCost: 0,
      },
    ]);
    expect(receiver.counts.signalled).toBe(1);
  });

  it('refuses an unsigned delivery, and one signed with another secret', async () => {
    const unsigned = await setup({ webhooks: { signature: 'none' } });
    await unsigned.client.submit(
      { model: 'flux-pro-1.1', body: { prompt: 'an unsigned chair' } },
      { webhook: unsigned.webhook, webhookSecret: SECRET },
    );
    unsigned.clock.advance(12_000);
    await unsigned.answered(1);
    expect(unsigned.receiver.counts).toMatchObject({ unauthorized: 1, signalled: 0 });

    const forged = await setup();
    await forged.client.submit(
      { model: 'flux-pro-1.1', body: { prompt: 'a forged chair' } },
      { webhook: forged.webhook, webhookSecret: 'not-the-receivers-secret' },
    );
    forged.clock.advance(12_000);
    await forged.answered(1);
    expect(forged.receiver.counts).toMatchObject({ unauthorized: 1, signalled: 0 });
    expect(forged.signals).toEqual([]);
  });

  it('refuses a delivery whose timestamp is more than 5 minutes from the receiver clock', async () => {
    const { clock, receiver, client, webhook, signals, answered } = await setup();
    await client.submit(
      { model: 'flux-pro-1.1', body: { prompt: 'a late chair' } },
      { webhook, webhookSecret: SECRET },
    );
    // The receiver's clock runs 6 minutes ahead of the emulator's.
    const skewed = await startWebhookServer({
      signal: async () => 'signalled',
      verifierFor: receiverVerifiers({ secret: SECRET }, ['bfl']),
      now: () => clock.now() + 6 * 60_000,
      log: () => {},
    });
    onTestFinished(() => skewed.close());
    await client.submit(
      { model: 'flux-pro-1.1', body: { prompt: 'a skewed chair' } },
      { webhook: `${skewed.url}/hooks/bfl/${encodeURIComponent(SHARD)}`, webhookSecret: SECRET },
    );
    clock.advance(12_000);
    await answered(1);
    await until(() => skewed.counts.unauthorized > 0);
    expect(skewed.counts).toMatchObject({ unauthorized: 1, signalled: 0 });
    expect(receiver.counts.signalled).toBe(1);
    expect(signals).toHaveLength(1);
  });
});
