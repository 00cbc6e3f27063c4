// Result downloads as every emulator serves them (emulator/core/downloads.ts): full bodies and
// headers, HEAD, truncated bodies that end in a premature close, and throttled bodies (complete,
// in many chunks, timers stopped on abort).
// Real HTTP on 127.0.0.1, port 0; undici as the client, as the downloader uses it.
import { createHash } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock, type Clock } from '../emulator/core/clock.js';
import { sendBytes, type DownloadFaults } from '../emulator/core/downloads.js';
import { renderResultPng } from '../emulator/apimart/images/render.js';

const png = renderResultPng({ prompt: 'download me', index: 0, size: '16:9', resolution: '1K' });
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Served {
  url: string;
  dispatcher: Agent;
  /** Resolves with each server-side response once it has closed. */
  closed: Promise<ServerResponse>[];
}

async function serve(body: Buffer, faults: DownloadFaults, clock: Clock = systemClock): Promise<Served> {
  const closed: Promise<ServerResponse>[] = [];
  const server: Server = createServer((req, res) => {
    sendBytes(req, res, body, 'image/png', faults, clock);
    closed.push(new Promise((resolve) => res.once('close', () => resolve(res))));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dispatcher = new Agent();
  cleanups.push(async () => {
    await dispatcher.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/results/img.png`, dispatcher, closed };
}

/** Reads the body chunk by chunk; a body that fails part-way yields its bytes and the error. */
async function download(served: Served, method: 'GET' | 'HEAD' = 'GET') {
  const response = await request(served.url, { method, dispatcher: served.dispatcher });
  const chunks: Buffer[] = [];
  let error: unknown;
  try {
    for await (const chunk of response.body) chunks.push(chunk as Buffer);
  } catch (caught) {
    error = caught;
  }
  return {
    status: response.statusCode,
    headers: response.headers,
    body: Buffer.concat(chunks),
    chunks: chunks.length,
    error,
  };
}

describe('sendBytes (a result PNG)', () => {
  it('sends the whole image with its type and length', async () => {
    const served = await serve(png, { truncate: false, kbps: 0 });
    const result = await download(served);
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(200);
    expect(result.headers['content-type']).toBe('image/png');
    expect(result.headers['content-length']).toBe(String(png.length));
    expect(sha256(result.body)).toBe(sha256(png));
  });

  it('answers HEAD with the headers only', async () => {
    const served = await serve(png, { truncate: false, kbps: 0 });
    const result = await download(served, 'HEAD');
    expect(result.status).toBe(200);
    expect(result.headers['content-length']).toBe(String(png.length));
    expect(result.body.length).toBe(0);
  });

  it('truncates: fewer bytes than content-length, then a premature close', async () => {
    const served = await serve(png, { truncate: true, kbps: 0 });
    const result = await download(served);
    expect(result.headers['content-length']).toBe(String(png.length));
    expect(result.error).toBeInstanceOf(Error);
    expect(result.body.length).toBeGreaterThan(0);
    expect(result.body.length).toBeLessThan(png.length);
    expect(result.body).toEqual(png.subarray(0, result.body.length));
  });

  it('throttles: the body arrives complete, in many chunks', async () => {
    const body = Buffer.alloc(40_000, 'throttled body ');
    // 800 kbps = 100 kB/s: about 0.4 s, written every 20 ms.
    const served = await serve(body, { truncate: false, kbps: 800 });
    const result = await download(served);
    expect(result.error).toBeUndefined();
    expect(sha256(result.body)).toBe(sha256(body));
    expect(result.chunks).toBeGreaterThanOrEqual(4);
  });

  it('throttles a truncated body and still cuts it short', async () => {
    const body = Buffer.alloc(20_000, 'half of it ');
    const served = await serve(body, { truncate: true, kbps: 1600 });
    const result = await download(served);
    expect(result.error).toBeInstanceOf(Error);
    expect(result.body.length).toBeLessThan(body.length);
    expect(result.body).toEqual(body.subarray(0, result.body.length));
  });

  it('stops writing and leaves no timer behind when the client goes away', async () => {
    const pending = new Set<object>();
    const clock: Clock = {
      now: () => systemClock.now(),
      setTimeout(fn, ms) {
        const token = {};
        pending.add(token);
        const timer = systemClock.setTimeout(() => {
          pending.delete(token);
          fn();
        }, ms);
        return { cancel: () => (pending.delete(token), timer.cancel()) };
      },
    };
    // 8 kbps = 1 kB/s: this body would take over 16 minutes.
    const served = await serve(Buffer.alloc(1_000_000, 'slow '), { truncate: false, kbps: 8 }, clock);
    const controller = new AbortController();
    const response = await request(served.url, { dispatcher: served.dispatcher, signal: controller.signal });
    await vi.waitFor(() => expect(pending.size).toBe(1));
    controller.abort();
    await response.body.dump().catch(() => undefined);
    expect(served.closed).toHaveLength(1);
    const res = await served.closed[0];
    expect(res?.writableEnded).toBe(false);
    expect(pending.size).toBe(0);
  });
});
