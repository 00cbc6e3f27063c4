// The rest of emulator/core: images of any size in PNG and JPEG with their looks, downloads with
// truncation and throttling, the server lifecycle, stats and server faults, and config loading
// with file:line:col problems.
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CoreStats,
  ImageCache,
  ServerFaults,
  closerFor,
  listen,
  loadConfigFile,
  parseConfig,
  parseConfigText,
  rate,
  renderImage,
  secondsRange,
  sendBytes,
  type ConfigSpec,
} from '../emulator/core/index.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

afterAll(removeTempDirs);

describe('images', () => {
  it('renders the exact size asked for, in PNG and JPEG, the same bytes every time', async () => {
    const spec = { prompt: 'a red chair', index: 1, width: 640, height: 368, format: 'png' as const };
    const png = await renderImage(spec);
    expect(await sharp(png).metadata()).toMatchObject({ format: 'png', width: 640, height: 368 });
    expect((await renderImage(spec)).equals(png)).toBe(true);
    const jpeg = await renderImage({ ...spec, format: 'jpeg' });
    expect(await sharp(jpeg).metadata()).toMatchObject({ format: 'jpeg', width: 640, height: 368 });
    const other = await renderImage({ ...spec, index: 2 });
    expect(other.equals(png)).toBe(false);
  });

  it('encodes through sharp the pixels the PNG holds, whatever an earlier image left in the memory drawn in', async () => {
    const spec = {
      prompt: 'a blue lamp, studio light',
      index: 3,
      width: 301,
      height: 207,
      format: 'jpeg' as const,
    };
    const first = await renderImage(spec);
    // Other images of the same size, drawn at once, then a black one: each reuses drawing memory.
    await Promise.all([1, 2, 4, 5].map((index) => renderImage({ ...spec, index, prompt: `other ${index}` })));
    const black = await sharp(await renderImage({ ...spec, look: 'black' })).stats();
    expect(black.channels.map((c) => c.max)).toEqual([0, 0, 0]);
    expect((await renderImage(spec)).equals(first)).toBe(true);
    // A row-stride slip would shear the JPEG against the PNG: compare them pixel by pixel.
    const decode = (bytes: Buffer) => sharp(bytes).removeAlpha().raw().toBuffer();
    const [fromJpeg, fromPng] = await Promise.all([
      decode(first),
      decode(await renderImage({ ...spec, format: 'png' })),
    ]);
    let difference = 0;
    for (let i = 0; i < fromPng.length; i++) difference += Math.abs(fromJpeg[i]! - fromPng[i]!);
    expect(fromJpeg.length).toBe(301 * 207 * 3);
    expect(difference / fromPng.length).toBeLessThan(4);
  });

  it('draws black and blank looks flat, and a corrupt one that does not decode', async () => {
    const base = { prompt: 'p', index: 0, width: 64, height: 48 };
    const black = await sharp(await renderImage({ ...base, format: 'png', look: 'black' })).stats();
    expect(black.channels.map((c) => c.max)).toEqual([0, 0, 0]);
    const blank = await sharp(await renderImage({ ...base, format: 'jpeg', look: 'blank' })).stats();
    expect(blank.channels.every((c) => c.max - c.min <= 2)).toBe(true);
    for (const format of ['png', 'jpeg'] as const) {
      const corrupt = await renderImage({ ...base, width: 512, height: 512, format, look: 'corrupt' });
      await expect(sharp(corrupt, { failOn: 'truncated' }).raw().toBuffer()).rejects.toThrow();
    }
  });

  it('renders a spec once while cached, even when asked for concurrently', async () => {
    let renders = 0;
    const cache = new ImageCache(1024 * 1024, async (spec) => {
      renders++;
      return renderImage(spec);
    });
    const spec = { prompt: 'x', index: 0, width: 32, height: 32, format: 'png' as const };
    const [a, b] = await Promise.all([cache.get(spec), cache.get(spec)]);
    await cache.get(spec);
    expect(renders).toBe(1);
    expect(a!.equals(b!)).toBe(true);
    expect(cache.bytes).toBe(a!.length);
  });
});

describe('server lifecycle and downloads', () => {
  it('listens on a free port, serves bytes with faults, and closes once however often asked', async () => {
    const bytes = Buffer.alloc(50_000, 7);
    let truncate = false;
    const server = createServer((req, res) =>
      sendBytes(req, res, bytes, 'image/jpeg', { truncate, kbps: 0 }, undefined, { 'x-id': 'a' }),
    );
    const url = await listen(server, '127.0.0.1', 0, 'test');
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const close = closerFor(server);
    const whole = await request(`${url}/x`);
    expect(whole.headers['content-type']).toBe('image/jpeg');
    expect(whole.headers['x-id']).toBe('a');
    expect((await whole.body.arrayBuffer()).byteLength).toBe(50_000);
    truncate = true;
    const cut = await request(`${url}/x`);
    await expect(cut.body.arrayBuffer()).rejects.toThrow();
    await Promise.all([close(), close()]);
    expect(close()).toBe(close());
    await expect(request(`${url}/x`)).rejects.toThrow();
  });

  it('refuses an address in use with a typed error', async () => {
    const first = createServer();
    const url = await listen(first, '127.0.0.1', 0, 'test');
    const port = Number(new URL(url).port);
    await expect(listen(createServer(), '127.0.0.1', port, 'fal')).rejects.toMatchObject({
      name: 'ProviderEmulatorListenError',
      message: expect.stringContaining('already in use'),
    });
    await closerFor(first)();
  });
});

describe('stats', () => {
  it('counts requests by route and status, faults by name, webhooks by outcome', () => {
    const stats = new CoreStats();
    stats.request('GET', '/{owner}/{app}/requests/{id}', 200);
    stats.request('GET', '/{owner}/{app}/requests/{id}', 200);
    stats.request('GET', '/{owner}/{app}/requests/{id}', 404);
    stats.fault('server_error');
    stats.webhook('lost');
    expect(stats.requests()).toEqual({ 'GET /{owner}/{app}/requests/{id}': { '200': 2, '404': 1 } });
    expect(stats.faults()).toEqual({ server_error: 1 });
    expect(stats.webhooks.lost).toBe(1);
    expect(stats.requestCount('GET /{owner}/{app}/requests/{id}', 404)).toBe(1);
  });

  it('draws a 5xx per request class at that class rate only', () => {
    let draws = 0;
    const faults = new ServerFaults<'submit' | 'status'>(
      () => (draws++ % 2 === 0 ? 0 : 0.99),
      () => ({ submit: 1 }),
    );
    expect(faults.draw('status')).toBeUndefined();
    expect([500, 502, 503]).toContain(faults.draw('submit'));
  });
});

describe('config', () => {
  const schema = z.strictObject({
    port: z.number().int().min(0),
    rates: z.strictObject({ failure: rate }),
    seconds: secondsRange,
    accounts: z.array(z.strictObject({ id: z.string() })),
  });
  type Config = z.output<typeof schema>;
  const spec: ConfigSpec<Config> = {
    provider: 'demo',
    defaults: { port: 1, rates: { failure: 0 }, seconds: [1, 2], accounts: [{ id: 'a' }] },
    schema,
    secretParents: ['accounts'],
  };

  it('merges overrides over the defaults and accepts one number for a seconds range', () => {
    expect(parseConfig(spec, { port: 5, seconds: 3 })).toEqual({
      ...spec.defaults,
      port: 5,
      seconds: [3, 3],
    });
  });

  it('lists every problem of a YAML file at file:line:col, never naming a key under a secret parent', () => {
    const file = join(tempDir(), 'demo.yaml');
    writeFileSync(
      file,
      'port: -1\nrates:\n  failure: 2\n  typo: 1\nseconds: [5, 1]\naccounts:\n  - id: a\n    sk-secret: 1\n',
    );
    let problems: readonly string[] = [];
    try {
      loadConfigFile(spec, file);
    } catch (error) {
      expect(error).toMatchObject({ code: 'demo_emulator_config_invalid' });
      problems = (error as { problems: readonly string[] }).problems;
    }
    expect(problems).toEqual([
      `${file}:1:7 port: Too small: expected number to be >=0`,
      `${file}:3:12 rates.failure: Too big: expected number to be <=1`,
      `${file}:4:3 rates.typo: unknown key`,
      `${file}:5:10 seconds: the first value (min) must not exceed the second (max)`,
      `${file}:8:5 accounts[0]: unknown key (its name is not shown: it may be a secret)`,
    ]);
    expect(problems.join('\n')).not.toContain('sk-secret');
    expect(() => parseConfigText(spec, ': : :', 'bad.yaml')).toThrow(
      /invalid demo emulator config bad\.yaml/,
    );
  });
});
