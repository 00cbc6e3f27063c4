// fal's webhook verifier against a JWKS served on loopback: a good delivery, forged, replayed,
// stale, missing headers, a key not in the JWKS, rotated keys (fetched again, at most once a
// minute), the 24-hour cache, and a JWKS that cannot be read (an error, for the receiver to
// answer 500 so that fal delivers again, not a 401); the receiver's verifier keyed from
// PIXELMILL_FAL_JWKS_URL; end to end through the webhook receiver.
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import {
  FalJwksUnavailableError,
  falWebhookKeysFromEnv,
  falWebhookVerifier,
  RESULT_RETENTION_MS,
} from '../providers/fal/index.js';
import type { IncomingWebhook, WebhookVerdict, WebhookVerifier } from '../providers/types.js';
import { startWebhookServer } from '../webhook/server.js';
import { receiverVerifiers } from '../webhook/verifiers.js';
import type { TaskFinishedSignal } from '../common/types.js';
import { rejection } from './support/assertions.js';

const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const USER = 'user_demo';
const IMAGE = 'https://v3.fal.media/files/abc/0.jpeg';

const pair = () => generateKeyPairSync('ed25519');
const K1 = pair();
const K2 = pair();
const STRANGER = pair();
const jwk = (key: KeyObject) => ({ ...key.export({ format: 'jwk' }), kid: 'k', use: 'sig', alg: 'EdDSA' });

// The JWKS server: which keys it publishes, whether it fails, how often it was asked.
let server: Server;
let jwksUrl: string;
let published: KeyObject[];
let failing: number | undefined;
let fetches: number;

beforeAll(async () => {
  server = createServer((_req, res) => {
    fetches++;
    if (failing !== undefined) return void res.writeHead(failing).end('down');
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ keys: published.map(jwk) }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  published = [K1.publicKey];
  failing = undefined;
  fetches = 0;
});

function okBody(requestId = 'req-1'): string {
  // As fal writes it (Python's json.dumps): the raw bytes are signed, not a re-serialization.
  return `{"error": null, "gateway_request_id": "${requestId}", "payload": {"images": [{"url": "${IMAGE}", "width": 1024}], "seed": 1}, "request_id": "${requestId}", "status": "OK"}`;
}

function signedHeaders(
  body: string,
  {
    key = K1.privateKey,
    requestId = 'req-1',
    at = NOW,
  }: { key?: KeyObject; requestId?: string; at?: number } = {},
): Record<string, string> {
  const timestamp = String(Math.floor(at / 1000));
  const digest = createHash('sha256').update(body).digest('hex');
  const signature = sign(null, Buffer.from(`${requestId}\n${USER}\n${timestamp}\n${digest}`), key).toString(
    'hex',
  );
  return {
    'x-fal-webhook-request-id': requestId,
    'x-fal-webhook-user-id': USER,
    'x-fal-webhook-timestamp': timestamp,
    'x-fal-webhook-signature': signature,
  };
}

const delivery = (
  body: string,
  headers: Record<string, string | undefined>,
  nowMs = NOW,
): IncomingWebhook => ({
  body: Buffer.from(body),
  headers,
  nowMs,
});

function refusal(verdict: WebhookVerdict): { status: number; reason: string } {
  if (verdict.ok) throw new Error(`accepted: ${JSON.stringify(verdict.notice)}`);
  return { status: verdict.status, reason: verdict.reason };
}

describe('fal webhook verification', () => {
  it('takes a signed delivery: the request, completed, with its image URLs', async () => {
    const body = okBody();
    const verdict = await falWebhookVerifier({ jwksUrl }).verify(delivery(body, signedHeaders(body)));
    expect(verdict).toEqual({
      ok: true,
      notice: {
        taskId: 'req-1',
        status: 'completed',
        result: { status: 'completed', urls: [IMAGE], expiresAt: NOW + RESULT_RETENTION_MS },
      },
    });
    expect(fetches).toBe(1);
  });

  it('refuses a forged body, a signature by a key fal does not publish, and a tampered header', async () => {
    const verifier = falWebhookVerifier({ jwksUrl });
    const body = okBody();
    const headers = signedHeaders(body);
    const forged = okBody().replace(IMAGE, 'https://evil.example/x.jpeg');
    expect(refusal(await verifier.verify(delivery(forged, headers)))).toEqual({
      status: 401,
      reason: "the signature verifies under none of fal's keys",
    });
    expect(
      refusal(await verifier.verify(delivery(body, signedHeaders(body, { key: STRANGER.privateKey })))),
    ).toMatchObject({
      status: 401,
    });
    expect(
      refusal(await verifier.verify(delivery(body, { ...headers, 'x-fal-webhook-user-id': 'someone-else' }))),
    ).toMatchObject({
      status: 401,
    });
    // The first failure fetched the keys again (a rotation?); the next ones, within a minute, did not.
    expect(fetches).toBe(2);
  });

  it('refuses missing headers and a malformed signature', async () => {
    const verifier = falWebhookVerifier({ jwksUrl });
    const body = okBody();
    const headers = signedHeaders(body);
    for (const name of Object.keys(headers))
      expect(refusal(await verifier.verify(delivery(body, { ...headers, [name]: undefined })))).toEqual({
        status: 401,
        reason: 'missing X-Fal-Webhook-Request-Id, -User-Id, -Timestamp or -Signature',
      });
    expect(
      refusal(await verifier.verify(delivery(body, { ...headers, 'x-fal-webhook-signature': 'abc' }))),
    ).toMatchObject({
      status: 401,
    });
    expect(fetches).toBe(0);
  });

  it('refuses timestamps more than 5 minutes off, either way; a replay within them is accepted (harmless)', async () => {
    const verifier = falWebhookVerifier({ jwksUrl });
    const body = okBody();
    for (const at of [NOW - 5 * 60_000 - 1_000, NOW + 5 * 60_000 + 1_000])
      expect(refusal(await verifier.verify(delivery(body, signedHeaders(body, { at }))))).toEqual({
        status: 401,
        reason: 'X-Fal-Webhook-Timestamp is more than 5 minutes off',
      });
    const headers = signedHeaders(body, { at: NOW - 4 * 60_000 });
    expect((await verifier.verify(delivery(body, headers))).ok).toBe(true);
    // The same delivery again: the receiver signals each task once (de-duplicated by task id).
    expect((await verifier.verify(delivery(body, headers))).ok).toBe(true);
  });

  it('takes a webhook signed with a key fal added since the keys were cached (rotation)', async () => {
    const verifier = falWebhookVerifier({ jwksUrl });
    const body = okBody();
    expect((await verifier.verify(delivery(body, signedHeaders(body)))).ok).toBe(true);
    published = [K1.publicKey, K2.publicKey];
    const rotated = signedHeaders(body, { key: K2.privateKey });
    expect((await verifier.verify(delivery(body, rotated, NOW + 1_000))).ok).toBe(true);
    expect(fetches).toBe(2);
    // Both keys are cached now: the old one still verifies, without another fetch.
    expect((await verifier.verify(delivery(body, signedHeaders(body), NOW + 2_000))).ok).toBe(true);
    expect(fetches).toBe(2);
  });

  it('keeps the keys at most 24 hours', async () => {
    const verifier = falWebhookVerifier({ jwksUrl });
    const body = okBody();
    await verifier.verify(delivery(body, signedHeaders(body)));
    const later = NOW + 23 * 3_600_000;
    await verifier.verify(delivery(body, signedHeaders(body, { at: later }), later));
    expect(fetches).toBe(1);
    const dayAfter = NOW + 24 * 3_600_000;
    await verifier.verify(delivery(body, signedHeaders(body, { at: dayAfter }), dayAfter));
    expect(fetches).toBe(2);
  });

  it('a JWKS that cannot be read is an error (fal will retry), never a refusal', async () => {
    failing = 503;
    const body = okBody();
    const error = await rejection(
      falWebhookVerifier({ jwksUrl }).verify(delivery(body, signedHeaders(body))),
    );
    expect(error).toBeInstanceOf(FalJwksUnavailableError);
    expect(error).toMatchObject({ code: 'fal_jwks_unavailable', retryable: true });
    published = [];
    failing = undefined;
    expect(
      await rejection(falWebhookVerifier({ jwksUrl }).verify(delivery(body, signedHeaders(body)))),
    ).toBeInstanceOf(FalJwksUnavailableError);
  });

  it('a signed body that is not a webhook of this request is a 400', async () => {
    const verifier = falWebhookVerifier({ jwksUrl });
    const notJson = 'hello';
    expect(refusal(await verifier.verify(delivery(notJson, signedHeaders(notJson))))).toEqual({
      status: 400,
      reason: 'the body is not JSON',
    });
    const other = okBody('req-2');
    expect(refusal(await verifier.verify(delivery(other, signedHeaders(other))))).toEqual({
      status: 400,
      reason: 'X-Fal-Webhook-Request-Id names another request than the body',
    });
  });
});

describe("the receiver's fal verifier, keyed from the environment", () => {
  it("verifies under the JWKS that PIXELMILL_FAL_JWKS_URL names; the receiver's own key URL wins", async () => {
    const body = okBody();
    const fromEnv = receiverVerifiers({}, ['fal'], { PIXELMILL_FAL_JWKS_URL: jwksUrl })('fal');
    expect((await fromEnv!.verify(delivery(body, signedHeaders(body)))).ok).toBe(true);
    expect(fetches).toBe(1);
    // Nothing listens on port 9: were the environment's address used, the keys could not be read.
    const given = receiverVerifiers({ extra: { fal: { jwksUrl } } }, ['fal'], {
      PIXELMILL_FAL_JWKS_URL: 'http://127.0.0.1:9/.well-known/jwks.json',
    })('fal');
    expect((await given!.verify(delivery(body, signedHeaders(body)))).ok).toBe(true);
    expect(fetches).toBe(2);
  });

  it('an unset or empty variable leaves the documented JWKS', () => {
    expect(falWebhookKeysFromEnv({})).toEqual({});
    expect(falWebhookKeysFromEnv({ PIXELMILL_FAL_JWKS_URL: '' })).toEqual({});
    expect(falWebhookKeysFromEnv({ PIXELMILL_FAL_JWKS_URL: jwksUrl })).toEqual({ jwksUrl });
  });
});

describe('fal webhooks through the receiver', () => {
  async function receiver(verifier: WebhookVerifier) {
    const signals: TaskFinishedSignal[] = [];
    const running = await startWebhookServer({
      verifierFor: (provider) => (provider === 'fal' ? verifier : undefined),
      signal: async (_workflowId, task) => {
        signals.push(task);
        return 'signalled';
      },
      now: () => NOW,
      log: () => {},
    });
    const url = `${running.url}/hooks/fal/${encodeURIComponent('pixelmill/chairs/shard-0001')}`;
    const post = async (body: string, headers: Record<string, string>) => {
      const answer = await request(url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...headers },
      });
      await answer.body.dump();
      return answer.statusCode;
    };
    return { running, signals, post };
  }

  it('signals the shard once; forged and stale deliveries get 401; an unreadable JWKS a 500', async () => {
    const { running, signals, post } = await receiver(falWebhookVerifier({ jwksUrl }));
    try {
      const body = okBody();
      expect(await post(body, signedHeaders(body))).toBe(200);
      expect(await post(body, signedHeaders(body))).toBe(200);
      expect(signals).toEqual([
        { taskId: 'req-1', status: 'completed', urls: [IMAGE], expiresAt: NOW + RESULT_RETENTION_MS },
      ]);
      expect(await post(body, signedHeaders(body, { key: STRANGER.privateKey }))).toBe(401);
      expect(await post(body, signedHeaders(body, { at: NOW - 10 * 60_000 }))).toBe(401);
      expect(running.counts).toMatchObject({ signalled: 1, duplicate: 1, unauthorized: 2 });
    } finally {
      await running.close();
    }
    failing = 500;
    const cold = await receiver(falWebhookVerifier({ jwksUrl }));
    try {
      const body = okBody('req-3');
      expect(await cold.post(body, signedHeaders(body, { requestId: 'req-3' }))).toBe(500);
      expect(cold.signals).toEqual([]);
    } finally {
      await cold.running.close();
    }
  });
});
