// The client against a tiny local server that answers whatever each test crafts: malformed
// and unexpected answers, hangs, truncated downloads, echoed secrets: cases a faithful
// emulator never produces on its own.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  ImageApiError,
  InvalidRequestError,
  InvalidResponseError,
  NetworkError,
  ResultDownloadError,
  ResultExpiredError,
  TimeoutError,
  toFailureDetails,
} from '../api/index.js';
import { createImageApiClient, type ImageApiClient } from '../providers/apimart/index.js';
import { isKnownTaskStatus, isTerminalStatus } from '../providers/apimart/wire.js';
import { UserError } from '../common/errors.js';
import { expectNoSecrets, rejection } from './support/assertions.js';
import { startLoopbackServer, type LoopbackServer } from './support/loopback-server.js';

const KEY = 'sk-live-very-secret-key-123';
type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

let loopback: LoopbackServer;
let server: Server;
let baseUrl: string;
let handler: Handler;
let seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
let client: ImageApiClient;

const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));
};

beforeAll(async () => {
  loopback = await startLoopbackServer((req, res, bytes) => {
    const body = bytes.toString('utf8');
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    handler(req, res, body);
  });
  server = loopback.server;
  baseUrl = loopback.origin;
});
afterAll(() => loopback.close());

beforeAll(() => {
  client = createImageApiClient({ baseUrl, apiKey: KEY, headersTimeoutMs: 2_000, bodyTimeoutMs: 2_000 });
});
afterAll(() => client.close());
afterEach(() => {
  seen = [];
});
seen = [];

describe('responses the spec does not promise', () => {
  it('returns unknown status values as they came', async () => {
    handler = (_req, res) =>
      json(res, 200, { code: 200, data: { id: 't1', status: 'in_progress', extra: 1 } });
    const task = await client.getTask('t1');
    expect(task.status).toBe('in_progress');
    expect(task).toMatchObject({ extra: 1 });
    expect(isKnownTaskStatus(task.status)).toBe(false);
    expect(isTerminalStatus(task.status)).toBe(false);
  });

  it('turns a garbled 2xx body into a retryable InvalidResponseError with an excerpt', async () => {
    handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"code":200,"da');
    const error = await rejection(client.getTask('t1'));
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({
      retryable: true,
      code: 'api_invalid_response',
      endpoint: 'GET /v1/tasks/{id}',
    });
    expect((error as Error).message).toContain('GET /v1/tasks/t1 returned an invalid response: not JSON');
    expect((error as Error).message).toContain('{"code":200,"da');
  });

  it('stops reading an oversized 2xx body and reports it as a retryable InvalidResponseError', async () => {
    handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(' '.repeat(9 * 1024 * 1024));
    const error = await rejection(client.getTask('t1'));
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ retryable: true, code: 'api_invalid_response' });
    expect((error as Error).message).toBe(
      'GET /v1/tasks/t1 returned an invalid response: body exceeds 8388608 bytes',
    );
  });

  it('turns a schema violation into InvalidResponseError naming the field', async () => {
    handler = (_req, res) =>
      json(res, 200, { code: 200, data: [{ id: 'a', status: 'pending' }, { id: 'b' }] });
    const error = await rejection(client.batchLookup(['a', 'b']));
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect((error as Error).message).toContain('data.1.status');
  });

  it('rejects an acknowledgement without task ids and flags the outcome as unknown', async () => {
    handler = (_req, res) => json(res, 200, { code: 200, data: [] });
    const error = await rejection(client.submit({ prompt: 'a cat' }));
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ outcomeUnknown: true });
  });

  it('rejects an answer about another task', async () => {
    handler = (_req, res) => json(res, 200, { code: 200, data: { id: 'other', status: 'pending' } });
    expect(await rejection(client.getTask('mine'))).toBeInstanceOf(InvalidResponseError);
  });

  it('reports a server that never answers as a retryable TimeoutError', async () => {
    const impatient = createImageApiClient({ baseUrl, apiKey: KEY, headersTimeoutMs: 150 });
    try {
      handler = () => undefined;
      const error = await rejection(impatient.getTask('t1'));
      expect(error).toBeInstanceOf(TimeoutError);
      expect(error).toMatchObject({ retryable: true, outcomeUnknown: true });
    } finally {
      server.closeAllConnections();
      await impatient.close();
    }
  });
});

describe('requests', () => {
  it('sends the bearer key, JSON body and language, each to the right path under a base path', async () => {
    const prefixed = createImageApiClient({ baseUrl: `${baseUrl}/gateway`, apiKey: KEY });
    try {
      handler = (req, res) =>
        req.url?.includes('/tasks/')
          ? json(res, 200, { code: 200, data: { id: 'a b', status: 'pending' } })
          : json(res, 200, { code: 200, data: [{ status: 'submitted', task_id: 'task_1' }] });
      const submitted = await prefixed.submit({ prompt: 'a red bicycle', size: '16:9', n: 1 });
      expect(submitted.taskIds).toEqual(['task_1']);
      expect(submitted.raw.data[0]?.status).toBe('submitted');
      await prefixed.getTask('a b', { language: 'ja' });
      expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual([
        'POST /gateway/v1/images/generations',
        'GET /gateway/v1/tasks/a%20b?language=ja',
      ]);
      expect(seen[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(seen[0]?.headers['content-type']).toBe('application/json');
      expect(JSON.parse(seen[0]?.body ?? '')).toEqual({ prompt: 'a red bicycle', size: '16:9', n: 1 });
    } finally {
      await prefixed.close();
    }
  });

  it('validates batch sizes and generation requests before sending anything', async () => {
    handler = (_req, res) => json(res, 500, {});
    for (const ids of [[], Array.from({ length: 501 }, (_, i) => `t${i}`)]) {
      const error = await rejection(client.batchLookup(ids));
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error).toMatchObject({ retryable: false, endpoint: 'POST /v1/tasks/batch' });
    }
    const tooMany = Array.from({ length: 16 }, (_, i) => `https://example.com/${i}.png`);
    const error = await rejection(client.submit({ prompt: 'x', image_urls: tooMany }));
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as Error).message).toContain('image_urls');
    expect(seen).toEqual([]);
  });

  it('lets a caller abort with its own reason, not an API error', async () => {
    handler = () => undefined;
    const controller = new AbortController();
    const pending = rejection(client.getTask('t1', { signal: controller.signal }));
    const reason = new Error('activity cancelled');
    setTimeout(() => controller.abort(reason), 20);
    expect(await pending).toBe(reason);
    server.closeAllConnections();
  });

  it('counts calls and failures per endpoint', async () => {
    const counting = createImageApiClient({ baseUrl, apiKey: KEY });
    try {
      handler = (_req, res) => json(res, 200, { code: 200, data: { id: 't1', status: 'pending' } });
      await counting.getTask('t1');
      handler = (_req, res) => json(res, 404, { error: { code: 'task_not_found', message: 'no' } });
      await rejection(counting.getTask('t2'));
      expect(counting.stats()).toEqual({ 'GET /v1/tasks/{id}': { calls: 2, failures: 1 } });
    } finally {
      await counting.close();
    }
  });

  it('rejects bad options as UserError', () => {
    expect(() => createImageApiClient({ baseUrl: 'not a url', apiKey: KEY })).toThrow(UserError);
    expect(() => createImageApiClient({ baseUrl: 'ftp://x', apiKey: KEY })).toThrow(UserError);
    expect(() => createImageApiClient({ baseUrl, apiKey: ' ' })).toThrow(UserError);
  });
});

describe('the API key stays secret', () => {
  it('never appears in an error, even when the server echoes it', async () => {
    handler = (_req, res) =>
      json(res, 401, {
        error: { type: 'auth', code: 'invalid_api_key', message: `Incorrect API key: ${KEY}` },
      });
    const error = await rejection(client.getTask('t1'));
    expect(error).toBeInstanceOf(AuthenticationError);
    expectNoSecrets([error, toFailureDetails(error)], [KEY]);
    expect((error as Error).message).toContain('[redacted]');
  });

  it('never appears in the client itself', () => {
    expectNoSecrets([client, { ...client }, client.stats()], [KEY]);
  });

  it('is not sent to the result host', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from('png!'));
    const result = await client.download(`${baseUrl}/results/a.png?sig=1`);
    expect(Buffer.concat(await result.body.toArray()).toString()).toBe('png!');
    expect(seen[0]?.headers.authorization).toBeUndefined();
  });
});

describe('downloads', () => {
  it('streams the body and reports length and type', async () => {
    const bytes = Buffer.alloc(100_000, 7);
    handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(bytes.length) }).end(bytes);
    const result = await client.download(`${baseUrl}/results/big.png`);
    expect(result).toMatchObject({ contentLength: bytes.length, contentType: 'image/png' });
    expect(Buffer.concat(await result.body.toArray()).equals(bytes)).toBe(true);
  });

  it('fails the stream with a retryable truncation error when the body stops short', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': '1000' });
      res.write(Buffer.alloc(10));
      setTimeout(() => res.socket?.destroy(), 10);
    };
    const result = await client.download(`${baseUrl}/results/cut.png`);
    const error = await rejection(result.body.toArray());
    expect(error).toBeInstanceOf(ResultDownloadError);
    expect(error).toMatchObject({ code: 'api_result_truncated', retryable: true });
    expect((error as Error).message).toContain('10 of 1000 bytes');
  });

  it('follows redirects and keeps signed query strings out of messages', async () => {
    handler = (req, res) =>
      req.url?.startsWith('/old')
        ? res.writeHead(302, { location: '/results/missing.png?X-Signature=abc' }).end()
        : res.writeHead(404).end('not here');
    const error = await rejection(client.download(`${baseUrl}/old.png?X-Signature=abc`));
    expect(error).toBeInstanceOf(ResultExpiredError);
    expect(error).toMatchObject({ retryable: false, httpStatus: 404, code: 'api_result_expired' });
    expect((error as Error).message).not.toContain('X-Signature');
  });

  it('classifies result host failures', async () => {
    handler = (_req, res) => res.writeHead(503, { 'retry-after': '4' }).end();
    const busy = await rejection(client.download(`${baseUrl}/results/a.png`));
    expect(busy).toBeInstanceOf(ResultDownloadError);
    expect(busy).toMatchObject({ retryable: true, retryAfterMs: 4000, httpStatus: 503 });
    handler = (_req, res) => res.writeHead(410).end();
    expect(await rejection(client.download(`${baseUrl}/results/a.png`))).toBeInstanceOf(ResultExpiredError);
    const bad = await rejection(client.download('file:///etc/passwd'));
    expect(bad).toMatchObject({ code: 'api_result_bad_url', retryable: false });
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const closed = createServer();
  closed.listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  return port;
}

describe('an unreachable service', () => {
  it('is a retryable NetworkError that cannot have reached the server', async () => {
    const port = await closedPort();
    const offline = createImageApiClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY });
    try {
      const error = await rejection(offline.submit({ prompt: 'x' }));
      expect(error).toBeInstanceOf(NetworkError);
      expect(error).toBeInstanceOf(ImageApiError);
      expect(error).toMatchObject({ retryable: true, outcomeUnknown: false, code: 'api_network_error' });
      expect((error as Error).message).toContain('ECONNREFUSED');
      expectNoSecrets([error], [KEY]);
    } finally {
      await offline.close();
    }
  });
});

describe('an unreachable result host', () => {
  it('is a retryable result network error naming the cause', async () => {
    const error = await rejection(client.download(`http://127.0.0.1:${await closedPort()}/a.png`));
    expect(error).toBeInstanceOf(ResultDownloadError);
    expect(error).toMatchObject({ code: 'api_result_network_error', retryable: true });
    expect((error as Error).message).toContain('ECONNREFUSED');
  });
});
