// Replicate's webhook verifier: Standard Webhooks signatures made here with node:crypto alone (not
// with the verifier's library), checked against the receiver's clock; forged, tampered, stale and
// unsigned deliveries refused; rotated keys and fetched secrets; replays harmless; no secret in any
// reason or error.
import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  replicateWebhookVerifier,
  ReplicateWebhookSecretError,
  SECRET_REFETCH_MS,
} from '../providers/replicate/webhook.js';
import type { IncomingWebhook, WebhookKeys, WebhookVerdict } from '../providers/types.js';
import { expectNoSecrets, rejection } from './support/assertions.js';

const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const secretOf = () => `whsec_${randomBytes(24).toString('base64')}`;
const SECRET = secretOf();
const OTHER = secretOf();

function sign(secret: string, id: string, seconds: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${seconds}.${body}`).digest('base64')}`;
}

const prediction = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'ufawqhfynnddngldkgtslldrkq',
    status: 'succeeded',
    created_at: '2026-11-26T11:59:50.000Z',
    completed_at: '2026-11-26T11:59:58.000Z',
    output: ['https://replicate.delivery/a/out-0.webp'],
    error: null,
    data_removed: false,
    ...fields,
  });

interface Delivery {
  body?: string;
  secret?: string;
  id?: string;
  signedAtMs?: number;
  nowMs?: number;
  headers?: Record<string, string | undefined>;
}

function delivery(options: Delivery = {}): IncomingWebhook {
  const body = options.body ?? prediction();
  const id = options.id ?? 'msg_2Lh9KRb0pzN4LePd3XiA0xVjMT7';
  const seconds = Math.floor((options.signedAtMs ?? NOW) / 1000);
  return {
    body: Buffer.from(body),
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(seconds),
      'webhook-signature': sign(options.secret ?? SECRET, id, seconds, body),
      ...options.headers,
    },
    nowMs: options.nowMs ?? NOW,
  };
}

const verify = (keys: WebhookKeys, webhook: IncomingWebhook) =>
  replicateWebhookVerifier(keys).verify(webhook);

function refusal(verdict: WebhookVerdict): { status: number; reason: string } {
  if (verdict.ok) throw new Error('expected a refusal');
  return { status: verdict.status, reason: verdict.reason };
}

describe('signatures', () => {
  it('accepts a genuine completed webhook with its result', async () => {
    expect(await verify({ secret: SECRET }, delivery())).toEqual({
      ok: true,
      notice: {
        taskId: 'ufawqhfynnddngldkgtslldrkq',
        status: 'completed',
        result: {
          status: 'completed',
          urls: ['https://replicate.delivery/a/out-0.webp'],
          expiresAt: Date.parse('2026-11-26T11:59:58.000Z') + 3_600_000,
        },
      },
    });
  });

  it('refuses a signature made with another key, and a verifier holding the wrong key', async () => {
    expect(refusal(await verify({ secret: SECRET }, delivery({ secret: OTHER })))).toEqual({
      status: 401,
      reason: 'wrong webhook-signature',
    });
    expect(refusal(await verify({ secret: OTHER }, delivery())).status).toBe(401);
  });

  it('refuses a body changed after signing', async () => {
    const genuine = delivery();
    const tampered = {
      ...genuine,
      body: Buffer.from(prediction({ output: ['https://evil.example/x.png'] })),
    };
    expect(refusal(await verify({ secret: SECRET }, tampered)).status).toBe(401);
  });

  it('refuses each missing header and a malformed timestamp', async () => {
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
      expect(
        refusal(await verify({ secret: SECRET }, delivery({ headers: { [name]: undefined } }))),
        name,
      ).toEqual({
        status: 401,
        reason: expect.stringContaining('missing'),
      });
    expect(
      refusal(
        await verify(
          { secret: SECRET },
          delivery({ headers: { 'webhook-timestamp': '2026-11-26T12:00:00Z' } }),
        ),
      ).status,
    ).toBe(401);
  });

  it('accepts any entry of a rotated key list, and ignores other versions', async () => {
    const genuine = delivery({ secret: SECRET });
    const header = genuine.headers['webhook-signature']!;
    const fromOld = delivery({ secret: OTHER }).headers['webhook-signature']!;
    const rotated = {
      ...genuine,
      headers: { ...genuine.headers, 'webhook-signature': `${fromOld} ${header}` },
    };
    expect((await verify({ secret: SECRET }, rotated)).ok).toBe(true);
    const wrongVersion = {
      ...genuine,
      headers: { ...genuine.headers, 'webhook-signature': header.replace('v1,', 'v2,') },
    };
    expect((await verify({ secret: SECRET }, wrongVersion)).ok).toBe(false);
  });
});

describe('timestamps and replays', () => {
  it('refuses a delivery signed more than 5 minutes before or after the receiver clock', async () => {
    const stale = delivery({ signedAtMs: NOW - 5 * 60_000 - 1000 });
    const early = delivery({ signedAtMs: NOW + 5 * 60_000 + 1000 });
    expect(refusal(await verify({ secret: SECRET }, stale))).toEqual({
      status: 401,
      reason: expect.stringContaining('5 minutes'),
    });
    expect(refusal(await verify({ secret: SECRET }, early)).status).toBe(401);
    expect((await verify({ secret: SECRET }, delivery({ signedAtMs: NOW - 4 * 60_000 }))).ok).toBe(true);
  });

  it('takes the receiver clock, not the wall clock (a compressed emulator clock)', async () => {
    const far = Date.UTC(2030, 0, 1);
    expect((await verify({ secret: SECRET }, delivery({ signedAtMs: far, nowMs: far }))).ok).toBe(true);
  });

  it('accepts a repeat of a genuine delivery (harmless: the receiver de-duplicates by task id), not an old one', async () => {
    const verifier = replicateWebhookVerifier({ secret: SECRET });
    const first = await verifier.verify(delivery());
    expect(await verifier.verify(delivery())).toEqual(first);
    const replayedLater = { ...delivery(), nowMs: NOW + 6 * 60_000 };
    expect(refusal(await verifier.verify(replayedLater)).status).toBe(401);
  });
});

describe('bodies', () => {
  it('a start event finishes nothing: its status, without a result', async () => {
    const started = delivery({
      body: prediction({ status: 'processing', output: null, completed_at: null }),
    });
    expect(await verify({ secret: SECRET }, started)).toEqual({
      ok: true,
      notice: { taskId: 'ufawqhfynnddngldkgtslldrkq', status: 'processing' },
    });
  });

  it('a moderated failure and an aborted prediction carry their errors', async () => {
    const moderated = await verify(
      { secret: SECRET },
      delivery({ body: prediction({ status: 'failed', output: null, error: 'NSFW content detected.' }) }),
    );
    expect(moderated).toMatchObject({
      ok: true,
      notice: { status: 'failed', result: { error: { type: 'content_policy_violation' } } },
    });
    const aborted = await verify(
      { secret: SECRET },
      delivery({ body: prediction({ status: 'aborted', output: null }) }),
    );
    expect(aborted).toMatchObject({
      notice: { result: { error: { type: 'task_timeout', code: 'aborted' } } },
    });
  });

  it('refuses signed bodies that are not JSON or not a prediction with 400', async () => {
    expect(refusal(await verify({ secret: SECRET }, delivery({ body: 'not json' })))).toEqual({
      status: 400,
      reason: 'the body is not JSON',
    });
    expect(refusal(await verify({ secret: SECRET }, delivery({ body: '{"hello":1}' })))).toEqual({
      status: 400,
      reason: 'the body is not a prediction',
    });
  });
});

describe('the secret', () => {
  it('is fetched once and kept', async () => {
    let fetched = 0;
    const verifier = replicateWebhookVerifier({ fetchSecret: async () => (fetched++, SECRET) });
    expect((await verifier.verify(delivery())).ok).toBe(true);
    expect((await verifier.verify(delivery())).ok).toBe(true);
    expect(fetched).toBe(1);
  });

  it('is fetched again on a mismatch (a rotated secret), at most once a minute', async () => {
    const served = [OTHER, SECRET];
    let fetched = 0;
    const verifier = replicateWebhookVerifier({ fetchSecret: async () => served[Math.min(fetched++, 1)]! });
    // The first fetch gets the old secret; the mismatch a minute later fetches the new one.
    expect((await verifier.verify(delivery())).ok).toBe(false);
    expect(fetched).toBe(1);
    const later = NOW + SECRET_REFETCH_MS;
    expect((await verifier.verify(delivery({ signedAtMs: later, nowMs: later }))).ok).toBe(true);
    expect(fetched).toBe(2);
    // Forgeries do not make it fetch on every delivery.
    await verifier.verify(delivery({ secret: secretOf(), signedAtMs: later + 1000, nowMs: later + 1000 }));
    expect(fetched).toBe(2);
  });

  it('prefers a whsec_ secret, and takes the fetcher over a secret of another provider', async () => {
    let fetched = 0;
    const fetchSecret = async () => (fetched++, SECRET);
    expect((await verify({ secret: SECRET, fetchSecret }, delivery())).ok).toBe(true);
    expect(fetched).toBe(0);
    expect((await verify({ secret: 'apimart-shared-secret', fetchSecret }, delivery())).ok).toBe(true);
    expect(fetched).toBe(1);
  });

  it('refuses every delivery when none is configured', async () => {
    expect(refusal(await verify({}, delivery()))).toEqual({
      status: 401,
      reason: 'no Replicate webhook secret is configured',
    });
    expect(refusal(await verify({ secret: 'not-a-replicate-secret' }, delivery())).status).toBe(401);
  });

  it('a failed fetch throws (the receiver answers 5xx, Replicate retries) and is tried again next time', async () => {
    let calls = 0;
    const verifier = replicateWebhookVerifier({
      fetchSecret: async () => {
        if (calls++ === 0) throw new Error('GET /v1/webhooks/default/secret failed with 503');
        return SECRET;
      },
    });
    const error = await rejection(verifier.verify(delivery()));
    expect(error).toBeInstanceOf(ReplicateWebhookSecretError);
    expect(error).toMatchObject({ code: 'replicate_webhook_secret_unavailable', retryable: true });
    expect((await verifier.verify(delivery())).ok).toBe(true);
  });

  it('never appears in a reason or an error', async () => {
    const verdicts = [
      await verify({ secret: SECRET }, delivery({ secret: OTHER })),
      await verify({ secret: SECRET }, delivery({ signedAtMs: NOW - 3_600_000 })),
      await verify({ secret: 'whsec_' }, delivery()),
    ];
    const error = await rejection(
      replicateWebhookVerifier({
        fetchSecret: () => Promise.reject(new Error('boom')),
      }).verify(delivery()),
    );
    const bare = (s: string) => s.slice('whsec_'.length);
    expectNoSecrets([...verdicts, error], [SECRET, OTHER, bare(SECRET), bare(OTHER)]);
  });
});
