// Test helpers for the BFL emulator: start one on 127.0.0.1 port 0 with config overrides (closed
// when the test ends), raw HTTP with an `x-key` header, a submit that expects a 200, and a
// config where every moment of a task is predictable on a manual clock.
import { expect, onTestFinished } from 'vitest';
import { request } from 'undici';
import {
  DEMO_BFL_KEY,
  startBflEmulator,
  type BflConfigOverrides,
  type RunningBflEmulator,
} from '../../emulator/bfl/index.js';
import type { Clock } from '../../emulator/core/clock.js';
import { mergeOverDefaults } from '../../emulator/core/index.js';
import { sendRaw, type RawResponse } from './raw-http.js';

export { ManualClock, startWebhookReceiver } from './emulator.js';
export { DEMO_BFL_KEY };

/** Queue 2 s, FLUX1.1 [pro] 10 s, exactly; sample URLs 600 s; retention 3600 s. */
export const FIXED: BflConfigOverrides = {
  generation: { queue_seconds: [2, 2] },
  models: { 'flux-pro-1.1': { seconds: [10, 10] } },
  task_retention_seconds: 3600,
};

/** FIXED with `config` deep-merged over it (arrays and scalars in `config` win). */
export function fixed(config: BflConfigOverrides = {}): BflConfigOverrides {
  return mergeOverDefaults(FIXED, config) as BflConfigOverrides;
}

export async function startTestBfl(
  config: BflConfigOverrides = {},
  options: { clock?: Clock; log?: (line: string) => void } = {},
): Promise<RunningBflEmulator> {
  const emulator = await startBflEmulator({ config: { host: '127.0.0.1', port: 0, ...config }, ...options });
  onTestFinished(() => emulator.close());
  return emulator;
}

export interface BflRequest {
  method?: string;
  /** Sent as `x-key`; omit for no header. */
  key?: string;
  /** An object is sent as JSON; a string or Buffer as is. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** A request to `pathOrUrl` (a path on `base`, or an absolute URL such as a polling_url). */
export async function bfl(base: string, pathOrUrl: string, options: BflRequest = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers['x-key'] = options.key;
  const url = /^https?:\/\//.test(pathOrUrl) ? pathOrUrl : `${base}${pathOrUrl}`;
  return sendRaw(url, { method: options.method, headers, body: options.body });
}

export interface SubmitAnswer {
  id: string;
  polling_url: string;
  cost: number;
  input_mp: number;
  output_mp: number;
}

/** Submits with the demo key (or `key`) and returns the answer; fails the test unless 200. */
export async function submit(
  emulator: RunningBflEmulator,
  model: string,
  body: object,
  key: string = DEMO_BFL_KEY,
): Promise<SubmitAnswer> {
  const response = await bfl(emulator.url, `/v1/${model}`, { key, body });
  expect(response.status, response.text).toBe(200);
  return response.json as SubmitAnswer;
}

/** GET of a polling_url (or any URL), with the demo key as a client sends it. */
export function poll(url: string, key: string = DEMO_BFL_KEY): Promise<RawResponse> {
  return bfl('', url, { key });
}

/** Downloads bytes from a URL: status, content type and the body. */
export async function download(
  url: string,
  method: 'GET' | 'HEAD' = 'GET',
): Promise<{ status: number; type: string | undefined; bytes: Buffer; text: string }> {
  const response = await request(url, { method });
  const bytes = Buffer.from(await response.body.arrayBuffer());
  const type = response.headers['content-type'];
  return {
    status: response.statusCode,
    type: Array.isArray(type) ? type[0] : type,
    bytes,
    text: bytes.toString('utf8'),
  };
}
