// Helpers of the fal emulator tests: start one on 127.0.0.1 port 0 (closed when the test ends),
// call it over real HTTP with `Authorization: Key ...`, receive its webhooks, and verify their
// signatures independently with node:crypto against the JWKS it serves.
import { createHash, createPublicKey, verify } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { onTestFinished } from 'vitest';
import type { Clock } from '../emulator/core/clock.js';
import {
  DEMO_FAL_KEY,
  startFalEmulator,
  type FalConfigOverrides,
  type RunningFalEmulator,
} from '../emulator/fal/index.js';
import { startLoopbackServer } from './support/loopback-server.js';
import { sendRaw, type RawResponse } from './support/raw-http.js';

export async function startFal(config: FalConfigOverrides = {}, clock?: Clock): Promise<RunningFalEmulator> {
  const emulator = await startFalEmulator({
    config: { host: '127.0.0.1', port: 0, ...config },
    ...(clock ? { clock } : {}),
    log: (line) => {
      throw new Error(line);
    },
  });
  onTestFinished(() => emulator.close());
  return emulator;
}

export interface FalRequest {
  method?: string;
  /** `Authorization: Key <key>`; default the demo key, null for no header. */
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

/** `target` is a full URL (as the emulator returns them) or a path on `base`. */
export async function fal(base: string, target: string, options: FalRequest = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? DEMO_FAL_KEY : options.key;
  if (key !== null) headers.authorization ??= `Key ${key}`;
  return sendRaw(target.startsWith('http') ? target : `${base}${target}`, {
    method: options.method,
    headers,
    body: options.body,
    // No keep-alive: a test that restarts an emulator on the same port must not reuse a dead socket.
    reset: true,
  });
}

/** Submits `input` to `model` and returns the IN_QUEUE answer's body (failing on anything but 200). */
export async function submit(
  emulator: RunningFalEmulator,
  input: unknown,
  options: { model?: string; query?: string; headers?: Record<string, string>; key?: string } = {},
): Promise<{
  request_id: string;
  status_url: string;
  response_url: string;
  cancel_url: string;
  queue_position: number;
  gateway_request_id?: string;
}> {
  const path = `/${options.model ?? 'fal-ai/flux/dev'}${options.query ? `?${options.query}` : ''}`;
  const response = await fal(emulator.url, path, {
    body: input,
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.key ? { key: options.key } : {}),
  });
  if (response.status !== 200) throw new Error(`submit answered ${response.status}: ${response.text}`);
  return response.json;
}

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  /** The raw body as sent (signatures are over these bytes). */
  raw: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary bodies
}

/** A webhook receiver answering the n-th POST (0-based) with `status(n)`. */
export async function startReceiver(status: (n: number) => number = () => 200) {
  const received: ReceivedWebhook[] = [];
  const server = await startLoopbackServer((req, res, body) => {
    const raw = body.toString('utf8');
    received.push({ headers: req.headers, raw, json: JSON.parse(raw) });
    res.writeHead(status(received.length - 1)).end();
  });
  onTestFinished(server.close);
  return { url: `${server.origin}/hooks/fal`, received };
}

/**
 * fal's documented verification, written here from the docs and not from the emulator: the
 * message `request_id \n user_id \n timestamp \n sha256_hex(body)`, an Ed25519 signature in hex,
 * valid under any key of the JWKS.
 */
export function verifyFalWebhook(
  jwks: { keys: { x: string; kty: string; crv: string }[] },
  webhook: ReceivedWebhook,
): boolean {
  const header = (name: string): string => String(webhook.headers[name] ?? '');
  const digest = createHash('sha256').update(Buffer.from(webhook.raw, 'utf8')).digest('hex');
  const message = Buffer.from(
    [
      header('x-fal-webhook-request-id'),
      header('x-fal-webhook-user-id'),
      header('x-fal-webhook-timestamp'),
      digest,
    ].join('\n'),
    'utf8',
  );
  const signature = Buffer.from(header('x-fal-webhook-signature'), 'hex');
  return jwks.keys.some(
    (jwk) =>
      jwk.kty === 'OKP' &&
      jwk.crv === 'Ed25519' &&
      verify(
        null,
        message,
        createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }),
        signature,
      ),
  );
}
