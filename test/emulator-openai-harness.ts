// Test helpers for the OpenAI emulator: start one on 127.0.0.1 port 0 (closed when the test ends),
// raw HTTP with a Bearer key, a multipart upload of JSONL, batch input lines, a config whose batch
// timing is exact on a manual clock, and a download that keeps what arrived before a cut.
import { onTestFinished } from 'vitest';
import { request } from 'undici';
import type { Clock } from '../emulator/core/clock.js';
import {
  DEMO_OPENAI_KEY,
  startOpenAIEmulator,
  type OpenAIConfigOverrides,
  type RunningOpenAIEmulator,
} from '../emulator/openai/index.js';
import { mergeOverDefaults } from '../emulator/core/index.js';
import { sendRaw, type RawResponse } from './support/raw-http.js';

export { ManualClock } from './support/emulator.js';

/** A wire object as tests read it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary wire objects
type Wire = any;
export { DEMO_OPENAI_KEY };

/** Validation 10 s, running 100 s, finalizing 5 s, cancelling 20 s, exactly; a sync call is held 30 s. */
export const FIXED: OpenAIConfigOverrides = {
  batches: {
    validation_seconds: [10, 10],
    batch_duration: [100, 100],
    finalizing_seconds: [5, 5],
    cancelling_seconds: [20, 20],
  },
  images: { generation_seconds: [30, 30] },
};

export function fixed(config: OpenAIConfigOverrides = {}): OpenAIConfigOverrides {
  return mergeOverDefaults(FIXED, config) as OpenAIConfigOverrides;
}

export async function startTestOpenAI(
  config: OpenAIConfigOverrides = {},
  options: { clock?: Clock; log?: (line: string) => void } = {},
): Promise<RunningOpenAIEmulator> {
  const emulator = await startOpenAIEmulator({
    config: { host: '127.0.0.1', port: 0, ...config },
    ...options,
  });
  onTestFinished(() => emulator.close());
  return emulator;
}

export interface ApiRequest {
  method?: string;
  /** Sent as `Authorization: Bearer <key>`; null for no header. Default: the demo key. */
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

export function api(emulator: { url: string }, path: string, options: ApiRequest = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? DEMO_OPENAI_KEY : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  return sendRaw(`${emulator.url}${path}`, { method: options.method, headers, body: options.body });
}

/** A multipart body with a `purpose` field and a `file` part. */
export function multipart(
  content: string | Buffer,
  { purpose = 'batch', filename = 'input.jsonl' }: { purpose?: string | null; filename?: string | null } = {},
): { body: Buffer; headers: Record<string, string> } {
  const boundary = '----pixelmill-test-boundary';
  const parts: Buffer[] = [];
  if (purpose !== null)
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n`),
    );
  if (filename !== null) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/jsonl\r\n\r\n`,
      ),
    );
    parts.push(Buffer.isBuffer(content) ? content : Buffer.from(content));
    parts.push(Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    body: Buffer.concat(parts),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

export async function upload(
  emulator: { url: string },
  content: string | Buffer,
  options: { purpose?: string | null; filename?: string | null; key?: string | null } = {},
): Promise<RawResponse> {
  const { body, headers } = multipart(content, options);
  return api(emulator, '/v1/files', { method: 'POST', body, headers, key: options.key });
}

/** One input line for /v1/images/generations. */
export function line(customId: string, body: Record<string, unknown> = {}): string {
  return JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/images/generations',
    body: {
      model: 'gpt-image-1',
      prompt: `an image for ${customId}`,
      size: '1024x1024',
      quality: 'low',
      ...body,
    },
  });
}

export function jsonl(count: number, body: Record<string, unknown> = {}, prefix = 'item'): string {
  return `${Array.from({ length: count }, (_, i) => line(`${prefix}-${i}`, body)).join('\n')}\n`;
}

/** Uploads `content` and creates a batch of it; returns the batch object (fails unless both are 200). */
export async function startBatch(
  emulator: { url: string },
  content: string,
  metadata?: Record<string, string>,
): Promise<{ id: string; status: string; [field: string]: unknown }> {
  const file = await upload(emulator, content);
  if (file.status !== 200) throw new Error(`upload: ${file.status} ${file.text}`);
  const batch = await api(emulator, '/v1/batches', {
    body: {
      input_file_id: file.json.id,
      endpoint: '/v1/images/generations',
      completion_window: '24h',
      ...(metadata ? { metadata } : {}),
    },
  });
  if (batch.status !== 200) throw new Error(`create: ${batch.status} ${batch.text}`);
  return batch.json;
}

export async function getBatch(emulator: { url: string }, id: string): Promise<Record<string, Wire>> {
  const response = await api(emulator, `/v1/batches/${id}`);
  if (response.status !== 200) throw new Error(`get batch: ${response.status} ${response.text}`);
  return response.json;
}

export interface Download {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The connection ended before the declared length. */
  cut: boolean;
}

/** GET of a file's content, keeping the bytes that arrived when the connection is cut. */
export async function download(emulator: { url: string }, fileId: string, range?: string): Promise<Download> {
  const response = await request(`${emulator.url}/v1/files/${fileId}/content`, {
    headers: { authorization: `Bearer ${DEMO_OPENAI_KEY}`, ...(range ? { range } : {}) },
  });
  const chunks: Buffer[] = [];
  let cut = false;
  try {
    for await (const chunk of response.body) chunks.push(chunk as Buffer);
  } catch {
    cut = true;
  }
  return { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks), cut };
}

/** A whole file, resuming with Range after every cut; also says how many cuts it took. */
export async function downloadResuming(
  emulator: { url: string },
  fileId: string,
): Promise<{ body: Buffer; cuts: number }> {
  const parts: Buffer[] = [];
  let have = 0;
  let cuts = 0;
  for (;;) {
    const got = await download(emulator, fileId, have > 0 ? `bytes=${have}-` : undefined);
    parts.push(got.body);
    have += got.body.length;
    if (!got.cut) return { body: Buffer.concat(parts), cuts };
    cuts++;
    if (cuts > 10_000) throw new Error('too many cuts');
  }
}

/** The JSON lines of a JSONL file. */
export function linesOf(body: Buffer): Wire[] {
  return body
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
}
