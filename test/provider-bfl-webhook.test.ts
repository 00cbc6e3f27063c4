// BFL's webhook verifier: both published readings of the authentication (X-BFL-Signature HMAC of
// the raw body, or the secret echoed in X-Webhook-Secret), both body shapes, forged, replayed,
// stale, missing and wrong keys, rotated secrets; no secret ever in a reason.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bflWebhookVerifier } from '../providers/bfl/webhook.js';
import type { IncomingWebhook, WebhookVerdict } from '../providers/types.js';

const SECRET = 'bfl-hook-secret-0123456789';
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const SAMPLE = 'https://delivery-us1.bfl.ai/results/t1/sample.jpeg?sp=r&sig=abc';

const sign = (body: string, secret = SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

function readyBody(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    id: 'task-1',
    status: 'Ready',
    result: { sample: SAMPLE, prompt: 'a chair', seed: 3 },
    progress: null,
    details: null,
    preview: null,
    timestamp: new Date(NOW - 2_000).toISOString(),
    ...extra,
  });
}

function delivery(body: string, headers: Record<string, string | undefined>, nowMs = NOW): IncomingWebhook {
  return { body: Buffer.from(body), headers, nowMs };
}

async function verdict(
  body: string,
  headers: Record<string, string | undefined>,
  keys: Parameters<typeof bflWebhookVerifier>[0] = { secret: SECRET },
  nowMs = NOW,
): Promise<WebhookVerdict> {
  return bflWebhookVerifier(keys).verify(delivery(body, headers, nowMs));
}

function refusal(result: WebhookVerdict): { status: number; reason: string } {
  if (result.ok) throw new Error(`accepted: ${JSON.stringify(result.notice)}`);
  expect(result.reason).not.toContain(SECRET);
  return { status: result.status, reason: result.reason };
}

describe('BFL webhook verification', () => {
  it('takes a delivery signed with X-BFL-Signature: the task, completed, with its sample URL', async () => {
    const body = readyBody();
    expect(await verdict(body, { 'x-bfl-signature': sign(body) })).toEqual({
      ok: true,
      notice: {
        taskId: 'task-1',
        status: 'completed',
        // The URL's 10 minutes run from when BFL sent it.
        result: { status: 'completed', urls: [SAMPLE], expiresAt: NOW - 2_000 + 600_000 },
      },
    });
  });

  it('takes the secret echoed in X-Webhook-Secret (the other published reading)', async () => {
    const result = await verdict(readyBody(), { 'x-webhook-secret': SECRET });
    expect(result.ok && result.notice.status).toBe('completed');
  });

  it('refuses a forged body, a wrong key, missing headers, and a bad signature beside a good secret', async () => {
    const body = readyBody();
    const forged = body.replace('a chair', 'a forged chair');
    expect(refusal(await verdict(forged, { 'x-bfl-signature': sign(body) }))).toEqual({
      status: 401,
      reason: 'wrong x-bfl-signature',
    });
    expect(refusal(await verdict(body, { 'x-bfl-signature': sign(body, 'another-secret') })).status).toBe(
      401,
    );
    expect(refusal(await verdict(body, { 'x-bfl-signature': 'sha256=zz' })).status).toBe(401);
    expect(refusal(await verdict(body, { 'x-bfl-signature': sign(body).slice(7) })).status).toBe(401);
    expect(refusal(await verdict(body, { 'x-webhook-secret': 'another-secret' })).status).toBe(401);
    expect(refusal(await verdict(body, {}))).toEqual({
      status: 401,
      reason: 'missing or wrong x-bfl-signature (or x-webhook-secret)',
    });
    expect(
      refusal(await verdict(body, { 'x-bfl-signature': sign(forged), 'x-webhook-secret': SECRET })).status,
    ).toBe(401);
  });

  it('refuses everything when no secret is configured', async () => {
    const body = readyBody();
    expect(refusal(await verdict(body, { 'x-bfl-signature': sign(body) }, {}))).toEqual({
      status: 401,
      reason: 'no BFL webhook secret is configured',
    });
  });

  it('takes deliveries signed with an earlier secret while it is listed (rotation)', async () => {
    const body = readyBody();
    const rotated = { secret: 'the-new-secret', previousSecrets: [SECRET] };
    expect((await verdict(body, { 'x-bfl-signature': sign(body) }, rotated)).ok).toBe(true);
    expect((await verdict(body, { 'x-bfl-signature': sign(body, 'the-new-secret') }, rotated)).ok).toBe(true);
    expect((await verdict(body, { 'x-webhook-secret': SECRET }, rotated)).ok).toBe(true);
    expect((await verdict(body, { 'x-bfl-signature': sign(body) }, { secret: 'the-new-secret' })).ok).toBe(
      false,
    );
  });

  it('refuses a timestamp more than 5 minutes off, either way; takes one within', async () => {
    const at = (ms: number) => readyBody({ timestamp: new Date(ms).toISOString() });
    const old = at(NOW - 5 * 60_000 - 1);
    expect(refusal(await verdict(old, { 'x-bfl-signature': sign(old) }))).toEqual({
      status: 401,
      reason: 'the timestamp is more than 5 minutes off',
    });
    const ahead = at(NOW + 5 * 60_000 + 1);
    expect(refusal(await verdict(ahead, { 'x-bfl-signature': sign(ahead) })).status).toBe(401);
    const edge = at(NOW - 5 * 60_000);
    expect((await verdict(edge, { 'x-bfl-signature': sign(edge) })).ok).toBe(true);
    // Unix seconds are read too.
    const seconds = readyBody({ timestamp: Math.floor(NOW / 1000) - 30 });
    expect((await verdict(seconds, { 'x-bfl-signature': sign(seconds) })).ok).toBe(true);
    const garbled = readyBody({ timestamp: 'yesterday' });
    expect(refusal(await verdict(garbled, { 'x-bfl-signature': sign(garbled) })).status).toBe(400);
  });

  it('takes a replay within the tolerance: harmless, the receiver signals a task once', async () => {
    const body = readyBody();
    const verifier = bflWebhookVerifier({ secret: SECRET });
    const first = await verifier.verify(delivery(body, { 'x-bfl-signature': sign(body) }));
    const again = await verifier.verify(delivery(body, { 'x-bfl-signature': sign(body) }, NOW + 60_000));
    expect(again).toEqual(first);
  });

  it('reads the smaller notice, failures, and a Ready without its sample (the shard then polls)', async () => {
    const notice = JSON.stringify({ task_id: 'task-2', status: 'SUCCESS', result: { sample: SAMPLE } });
    const read = await verdict(notice, { 'x-bfl-signature': sign(notice) });
    // No timestamp: the URL's life runs from arrival.
    expect(read).toEqual({
      ok: true,
      notice: {
        taskId: 'task-2',
        status: 'completed',
        result: { status: 'completed', urls: [SAMPLE], expiresAt: NOW + 600_000 },
      },
    });
    const moderated = JSON.stringify({ task_id: 'task-3', status: 'FAILED', error: 'Request Moderated' });
    const failed = await verdict(moderated, { 'x-bfl-signature': sign(moderated) });
    expect(failed.ok && failed.notice).toEqual({
      taskId: 'task-3',
      status: 'failed',
      result: {
        status: 'failed',
        error: {
          type: 'content_policy_violation',
          code: 'Request Moderated',
          message: "BFL's moderation refused the request",
        },
        creditsCost: 0,
      },
    });
    const bare = readyBody({ result: null });
    const noSample = await verdict(bare, { 'x-bfl-signature': sign(bare) });
    expect(noSample.ok && noSample.notice).toEqual({ taskId: 'task-1', status: 'completed' });
  });

  it('answers 400 to a signed body that is not a task notice', async () => {
    for (const body of ['not json', '[]', JSON.stringify({ status: 'Ready' }), JSON.stringify({ id: 'x' })])
      expect(refusal(await verdict(body, { 'x-bfl-signature': sign(body) })).status, body).toBe(400);
  });
});
