// Helpers for the Replicate emulator's tests: start one on 127.0.0.1 port 0 (closed with the
// test), call its API with a token, create predictions, and check a webhook's signature with
// node:crypto on its own (never with the emulator's code).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { expect, onTestFinished } from 'vitest';
import type { Clock } from '../emulator/core/clock.js';
import {
  DEMO_REPLICATE_TOKEN,
  startReplicateEmulator,
  type ReplicateConfigOverrides,
  type RunningReplicateEmulator,
} from '../emulator/replicate/index.js';
import { call, type RawResponse } from './support/emulator.js';

/** A prediction as the tests read it: JSON of any shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
export type Json = any;

export { ManualClock, startWebhookReceiver } from './support/emulator.js';
export const TOKEN = DEMO_REPLICATE_TOKEN;
export const SCHNELL = '/v1/models/black-forest-labs/flux-schnell/predictions';
export const SDXL_VERSION = '7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc';
/** The start of the manual clock (support/emulator.ts). */
export const T0 = Date.UTC(2026, 0, 1);

export async function startReplicate(
  config: ReplicateConfigOverrides = {},
  options: { clock?: Clock; log?: (line: string) => void } = {},
): Promise<RunningReplicateEmulator> {
  const emulator = await startReplicateEmulator({
    config: { host: '127.0.0.1', port: 0, ...config },
    ...options,
  });
  onTestFinished(() => emulator.close());
  return emulator;
}

export interface ApiOptions {
  method?: string;
  /** Default: the demo token; null sends no Authorization header. */
  token?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

export function api(
  emulator: RunningReplicateEmulator,
  path: string,
  options: ApiOptions = {},
): Promise<RawResponse> {
  const token = options.token === undefined ? TOKEN : options.token;
  return call(emulator.url, path, {
    ...(options.method ? { method: options.method } : {}),
    ...(token === null ? {} : { key: token }),
    ...(options.body === undefined ? {} : { body: options.body }),
    headers: { 'content-type': 'application/json', ...options.headers },
  });
}

/** Creates a flux-schnell prediction (or at `path`) and returns its JSON; fails unless 201. */
export async function create(
  emulator: RunningReplicateEmulator,
  body: object = { input: { prompt: 'a red fox in the snow' } },
  options: { path?: string; headers?: Record<string, string>; token?: string } = {},
): Promise<Json> {
  const response = await api(emulator, options.path ?? SCHNELL, {
    method: 'POST',
    body,
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.token ? { token: options.token } : {}),
  });
  expect(response.status, response.text).toBe(201);
  return response.json;
}

export async function getPrediction(emulator: RunningReplicateEmulator, id: string): Promise<Json> {
  const response = await api(emulator, `/v1/predictions/${id}`);
  expect(response.status, response.text).toBe(200);
  return response.json;
}

/** Standard Webhooks verification written from the spec: HMAC-SHA256 over id.timestamp.body. */
export function signatureValid(headers: IncomingHttpHeaders, body: string, secret: string): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  const key = Buffer.from(secret.split('_')[1]!, 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}
