// Reference images on the emulator: every `image_urls` entry is downloaded at submit from a real
// loopback server; a URL that cannot be had, is no image or is too big is a 400 in the error
// envelope (its index, never the URL), nothing created or charged; the result images show the
// first reference, decoded by real sharp; the journal keeps it across a restart.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { referenceBox } from '../emulator/apimart/images/render.js';
import { call, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';
import { tempDir } from './support/temp-dir.js';

const KEY = 'sk-live-demo';
const RED: [number, number, number] = [220, 20, 30];
const fast = {
  generation: {
    queue_seconds: [0, 0] as [number, number],
    seconds: { '1K': [1, 1], '2K': [1, 1], '4K': [1, 1] } as const,
  },
};

let server: Server;
let base: string;
const files = new Map<string, { type: string; body: Buffer } | 'hang'>();

beforeAll(async () => {
  const red = await sharp({
    create: { width: 300, height: 200, channels: 3, background: { r: RED[0], g: RED[1], b: RED[2] } },
  })
    .jpeg()
    .toBuffer();
  files.set('/red.jpg', { type: 'image/jpeg', body: red });
  files.set('/blue.png', {
    type: 'image/png',
    body: await sharp({ create: { width: 50, height: 50, channels: 3, background: '#1030e0' } })
      .png()
      .toBuffer(),
  });
  files.set('/notes.txt', { type: 'text/plain', body: Buffer.from('not a photo') });
  files.set('/fake.png', { type: 'image/png', body: Buffer.from('PNG but not really') });
  files.set('/big.png', { type: 'image/png', body: Buffer.alloc(3000, 1) });
  files.set('/slow.png', 'hang');
  server = createServer((req, res) => {
    const file = files.get((req.url ?? '').split('?')[0]!);
    if (file === 'hang') return; // never answers
    if (!file) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': file.type, 'content-length': file.body.length }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const limits = { reference_images: { fetch: true, timeout_ms: 500, max_bytes: 2_000 } };

describe('reference images', () => {
  it.each([
    ['a URL that answers 404', '/missing.png', 'image_url_unreachable', /could not be downloaded: HTTP 404/],
    ['a server that never answers', '/slow.png', 'image_url_unreachable', /no answer within 500 ms/],
    ['a text file', '/notes.txt', 'image_url_not_image', /content type "text\/plain"/],
    ['bytes that do not decode', '/fake.png', 'image_url_not_image', /does not decode/],
    [
      'a file over max_bytes',
      '/big.png',
      'image_url_too_large',
      /is too large \(3000 bytes\); the limit is 2000 bytes/,
    ],
  ])('refuses %s with a 400 naming the entry, and creates nothing', async (_, path, code, message) => {
    const emulator = await startTestEmulator(limits);
    const before = (await call(emulator.url, '/_emulator/stats')).json;
    const url = `${base}${path}?X-Amz-Signature=secret`;
    const response = await call(emulator.url, '/v1/images/generations', {
      key: KEY,
      body: { prompt: 'a chair', image_urls: [`${base}/blue.png`, url] },
    });
    expect(response.status).toBe(400);
    expect(response.json.error).toMatchObject({ type: 'invalid_request_error', code, param: 'image_urls' });
    expect(response.json.error.message).toMatch(/^image_urls\[1\] /);
    expect(response.json.error.message).toMatch(message);
    expect(response.text).not.toContain('secret');
    const after = (await call(emulator.url, '/_emulator/stats')).json;
    expect(after.tasks_total).toBe(before.tasks_total);
  });

  it('draws the first reference into every result image of its task', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(
      { ...fast, ...limits, reference_images: { ...limits.reference_images, max_bytes: 100_000 } },
      { clock },
    );
    const id = await submitTask(emulator, KEY, {
      prompt: 'a chair in a sunlit room',
      size: '16:9',
      n: 2,
      image_urls: [`${base}/red.jpg`, `${base}/blue.png`],
    });
    clock.advance(1000);
    const task = (await call(emulator.url, `/v1/tasks/${id}`, { key: KEY })).json.data;
    expect(task.status).toBe('completed');
    const plain = await submitTask(emulator, KEY, { prompt: 'a chair in a sunlit room', size: '16:9' });
    clock.advance(1000);
    const plainTask = (await call(emulator.url, `/v1/tasks/${plain}`, { key: KEY })).json.data;
    for (const url of [...task.result.url, plainTask.result.url[0]]) {
      const png = Buffer.from(await (await request(url)).body.arrayBuffer());
      const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
      const box = referenceBox(info.width, info.height);
      const centre = ((box.y + box.side / 2) * info.width + box.x + box.side / 2) * info.channels;
      const pixel = [...data.subarray(Math.round(centre), Math.round(centre) + 3)];
      const isRed = pixel.every((value, k) => Math.abs(value - RED[k]!) <= 12);
      expect(isRed, `pixel ${pixel.join(',')} of ${url}`).toBe(url !== plainTask.result.url[0]);
    }
    expect((await call(emulator.url, '/_emulator/stats')).json.reference_images_fetched).toBe(2);
  });

  it('keeps the reference of a task in its journal: the same image after a restart', async () => {
    const dir = tempDir();
    const config = {
      ...fast,
      ...limits,
      reference_images: { ...limits.reference_images, max_bytes: 100_000 },
      state_file: join(dir, 'tasks.jsonl'),
    };
    const clock = new ManualClock();
    const first = await startTestEmulator(config, { clock });
    const id = await submitTask(first, KEY, { prompt: 'a lamp', image_urls: [`${base}/red.jpg`] });
    clock.advance(1000);
    const url = (await call(first.url, `/v1/tasks/${id}`, { key: KEY })).json.data.result.url[0];
    const before = Buffer.from(await (await request(url)).body.arrayBuffer());
    await first.close();
    const second = await startTestEmulator(config, { clock });
    const again = Buffer.from(await (await request(`${second.url}/results/${id}/0.png`)).body.arrayBuffer());
    expect(again.equals(before)).toBe(true);
  });

  it('takes any http(s) URL unread with reference_images.fetch off', async () => {
    const emulator = await startTestEmulator({
      reference_images: { fetch: false, timeout_ms: 500, max_bytes: 10 },
    });
    const response = await call(emulator.url, '/v1/images/generations', {
      key: KEY,
      body: { prompt: 'x', image_urls: [`${base}/missing.png`] },
    });
    expect(response.status).toBe(200);
  });
});
