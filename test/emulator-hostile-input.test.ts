// Bad input never crashes or stalls the emulator: bodies that are not UTF-8, too large (declared
// or streamed), cut short or absurdly nested; garbage in paths, URLs, headers and methods; bytes
// that are not HTTP at all. Each gets an HTTP answer, nothing is reported as an internal error,
// and the emulator keeps serving. Malformed requests go over a raw socket, as undici would refuse
// to send them.
import { connect } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../emulator/index.js';
import { call, expectCatalogueText, startTestEmulator, submitTask } from './support/emulator.js';

const KEY = 'sk-live-demo';
const SUBMIT = '/v1/images/generations';
let emulator: RunningEmulator;
const internalErrors: string[] = [];

beforeAll(async () => {
  emulator = await startTestEmulator(
    {
      rate_limits: {
        submit: { per_second: 1_000, burst: 1_000 },
        query: { per_second: 1_000, burst: 1_000 },
      },
    },
    { log: (line) => internalErrors.push(line) },
  );
});

/** Sends `bytes` on a fresh connection; resolves with the status code of the answer (0: none). */
function raw(bytes: Buffer | string, options: { endAfterSend?: boolean } = {}): Promise<number> {
  const { port } = new URL(emulator.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
      if (options.endAfterSend ?? true) socket.end();
    });
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      answer += chunk;
      // One answer is enough; the server may keep the connection open for more.
      if (/\r\n\r\n/.test(answer) && !(options.endAfterSend ?? true)) socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
  });
}

const request = (head: string, body = ''): Buffer => Buffer.from(`${head}\r\n${body}`, 'latin1');
const auth = `Authorization: Bearer ${KEY}\r\n`;

describe('hostile request bodies', () => {
  it('rejects a body that is not UTF-8 as invalid_json instead of mangling the prompt', async () => {
    const latin1 = Buffer.from('{"prompt":"caf\xe9"}', 'latin1');
    for (const path of [SUBMIT, '/v1/tasks/batch']) {
      const response = await call(emulator.url, path, { key: KEY, body: latin1 });
      expect(response.status).toBe(400);
      expect(response.json.error.code).toBe('invalid_json');
    }
    // A byte-order mark is allowed (RFC 8259 8.1) and the UTF-8 text after it kept intact.
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"prompt":"café"}')]);
    expect((await call(emulator.url, SUBMIT, { key: KEY, body: withBom })).status).toBe(200);
  });

  it('stops reading a streamed body over 1 MiB and answers 400 body_too_large', async () => {
    const { port } = new URL(emulator.url);
    const head = `POST ${SUBMIT} HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked\r\n\r\n`;
    const chunk = `100000\r\n${'a'.repeat(0x100000)}\r\n`;
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(head);
        // Two chunks of 1 MiB, and never the final zero chunk: the answer must not wait for it.
        socket.write(chunk);
        socket.write(chunk);
      });
      socket.setEncoding('latin1');
      socket.on('data', (data: string) => (text += data));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/connection: close/i);
    expect(answer).toContain('"code":"body_too_large"');
  });

  it('answers a body declared over 1 MiB at once, without waiting for it', async () => {
    expect(await raw(`POST ${SUBMIT} HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 5000000\r\n\r\n{`)).toBe(
      400,
    );
  });

  it('answers a body the client cuts short', async () => {
    const head = `POST /v1/tasks/batch HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 100\r\n`;
    expect(await raw(request(head, '{"task_ids":['))).toBe(400);
  });

  it('rejects deeply nested JSON as a wrong shape, not with a stack overflow', async () => {
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    const batch = await call(emulator.url, '/v1/tasks/batch', { key: KEY, body: deep });
    expect(batch.json.error.code).toBe('invalid_body');
    const prompt = await call(emulator.url, SUBMIT, { key: KEY, body: `{"prompt":${deep}}` });
    expect(prompt.json.error.code).toBe('invalid_prompt');
  });

  it('treats "__proto__" in a body as an ordinary ignored field', async () => {
    const id = await submitTask(emulator, KEY, JSON.parse('{"prompt":"x","__proto__":{"n":4}}') as object);
    const task = (await call(emulator.url, `/v1/tasks/${id}`, { key: KEY })).json.data;
    expect(task.credits_cost).toBe(1);
    expect(({} as Record<string, unknown>).n).toBeUndefined();
  });
});

describe('hostile paths, headers and methods', () => {
  it.each([
    '/v1/tasks/%',
    '/v1/tasks/%E0%A4%A',
    '/v1/tasks/%00',
    '/v1/tasks/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '/results/%ZZ/0.png',
    '/results/../../etc/passwd',
    '/_emulator/%ZZ',
    `/v1/tasks/${'a'.repeat(8_000)}?language=${'%'.repeat(500)}`,
    '/v1/tasks/x?language=%ZZ&&==&language',
  ])('answers %s with a 404 envelope', async (path) => {
    const response = await call(emulator.url, path, { key: KEY });
    expect(response.status).toBe(404);
    expect(response.json.error.type).toBe('not_found_error');
  });

  it('answers an over-long URL, a non-HTTP line and an unknown method at the HTTP layer', async () => {
    expect(await raw(`GET /v1/tasks/${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`)).toBe(431);
    expect(await raw('\x00\x01\x02 not http at all\r\n\r\n')).toBe(400);
    expect(await raw(`FROB ${SUBMIT} HTTP/1.1\r\nHost: x\r\n\r\n`)).toBe(400);
    expect(await raw(`GET /v1/tasks/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n`)).toBe(400);
  });

  it.each(['HEAD', 'OPTIONS', 'PUT', 'PATCH', 'DELETE', 'PROPFIND'])(
    'answers %s on the API routes with 405 and an Allow header',
    async (method) => {
      const routes: [string, string][] = [
        [SUBMIT, 'POST'],
        ['/v1/tasks/batch', 'POST'],
        ['/v1/tasks/task_00000000000000000000000000', 'GET'],
      ];
      for (const [path, allowed] of routes) {
        const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`;
        expect(await raw(head), `${method} ${path}`).toBe(405);
        if (method !== 'HEAD') {
          const response = await call(emulator.url, path, { method, key: KEY });
          expect(response.headers.allow).toBe(allowed);
          expect(response.json.error.code).toBe('method_not_allowed');
          expectCatalogueText(response.json.error.message, 'method_not_allowed', 'en');
          expect(response.json.error.message).toContain(`${method} `);
        }
      }
    },
  );

  it('routes a request target in absolute form by its path', async () => {
    const id = await submitTask(emulator, KEY, { prompt: 'absolute' });
    const head = `GET http://elsewhere.test/v1/tasks/${id}?language=ja HTTP/1.1\r\nHost: x\r\n${auth}`;
    expect(await raw(`${head}Connection: close\r\n\r\n`)).toBe(200);
  });

  it('answers absurd Authorization headers with 401', async () => {
    for (const value of ['Bearer', 'Bearer \xff\xfe\xfd', `Bearer ${'k'.repeat(8_000)}`, 'Bearer a b c']) {
      const head = `GET /v1/tasks/x HTTP/1.1\r\nHost: x\r\nAuthorization: ${value}\r\nConnection: close\r\n\r\n`;
      expect(await raw(head), value.slice(0, 20)).toBe(401);
    }
  });

  it('has reported no internal error and still serves normal requests', async () => {
    expect(internalErrors).toEqual([]);
    await submitTask(emulator, KEY, { prompt: 'still here' });
    expect((await call(emulator.url, '/_emulator/stats')).status).toBe(200);
  });
});
