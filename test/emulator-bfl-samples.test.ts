// result.sample: a signed delivery URL that serves the image (its format and exact size) for 10
// minutes (scaled by time_scale), then answers 403 AuthenticationFailed (or 404 by the knob);
// tampered signatures; re-signing on each poll; the "expired before anyone downloaded it" count;
// and the download faults (truncation, slow link).
import sharp from 'sharp';
import { describe, expect, it, vi } from 'vitest';
import type { BflConfigOverrides } from '../emulator/bfl/index.js';
import { bfl, download, fixed, ManualClock, poll, startTestBfl, submit } from './support/emulator-bfl.js';

async function setup(config: BflConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestBfl(fixed(config), { clock });
  return { clock, emulator };
}

async function readySample(
  clock: ManualClock,
  emulator: Awaited<ReturnType<typeof startTestBfl>>,
  model = 'flux-pro-1.1',
  body: object = { prompt: 'a harbour at dawn' },
) {
  const answer = await submit(emulator, model, body);
  clock.advance(60_000);
  const view = (await poll(answer.polling_url)).json;
  expect(view.status).toBe('Ready');
  return { id: answer.id as string, sample: view.result.sample as string };
}

describe('the sample URL', () => {
  it('serves the image in the asked format and size, without a key', async () => {
    const { clock, emulator } = await setup({ models: { 'flux-2-pro': { seconds: [5, 5] } } });
    const cases: [string, object, string, string, number, number][] = [
      ['flux-pro-1.1', { prompt: 'jpeg fox', width: 512, height: 768 }, 'jpeg', 'image/jpeg', 512, 768],
      [
        'flux-pro-1.1',
        { prompt: 'png fox', width: 640, height: 256, output_format: 'png' },
        'png',
        'image/png',
        640,
        256,
      ],
      [
        'flux-2-pro',
        { prompt: 'webp fox', width: 800, height: 608, output_format: 'webp' },
        'webp',
        'image/webp',
        800,
        608,
      ],
      ['flux-kontext-pro', { prompt: 'kontext fox', aspect_ratio: '16:9' }, 'png', 'image/png', 1376, 768],
    ];
    for (const [model, body, format, type, width, height] of cases) {
      const { sample } = await readySample(clock, emulator, model, body);
      const image = await download(sample);
      expect([model, image.status, image.type]).toEqual([model, 200, type]);
      const meta = await sharp(image.bytes).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual([format, width, height]);
      const head = await download(sample, 'HEAD');
      expect([head.status, head.bytes.length]).toEqual([200, 0]);
    }
    expect(emulator.stats().samples).toMatchObject({ downloads: 4, fetched: 4, expired_before_download: 0 });
  });

  it('serves the same bytes on every download, on the delivery host when one is configured', async () => {
    const { clock, emulator } = await setup({ polling_host: 'localhost', delivery_host: 'localhost' });
    const { sample } = await readySample(clock, emulator);
    expect(new URL(sample).hostname).toBe('localhost');
    const [a, b] = [await download(sample), await download(sample)];
    expect(a.bytes.equals(b.bytes)).toBe(true);
  });

  it('expires 10 minutes after the task ended: 403 AuthenticationFailed as a blob host answers', async () => {
    const { clock, emulator } = await setup();
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'fleeting' });
    clock.advance(12_000);
    const sample = (await poll(answer.polling_url)).json.result.sample as string;
    const expiry = new URL(sample).searchParams.get('se');
    expect(expiry).toBe(new Date(clock.now() + 600_000).toISOString());
    clock.advance(599_999);
    expect((await download(sample, 'HEAD')).status).toBe(200);
    clock.advance(1);
    const expired = await download(sample);
    expect([expired.status, expired.type]).toEqual([403, 'application/xml']);
    expect(expired.text).toContain('<Code>AuthenticationFailed</Code>');
    expect(expired.text).toContain('Signature not valid in the specified time frame');
    // Polling again repeats the same (expired) URL: it was signed when the task ended.
    expect((await poll(answer.polling_url)).json.result.sample).toBe(sample);
    expect(emulator.stats().samples).toMatchObject({
      expired_before_download: 1,
      refused_expired: 1,
      fetched: 0,
    });
  });

  it('answers 404 BlobNotFound for an expired URL with sample.expired_status: 404, and scales the 10 minutes', async () => {
    const { clock, emulator } = await setup({ sample: { expired_status: 404 }, time_scale: 0.01 });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'fleeting' });
    clock.advance(120);
    const sample = (await poll(answer.polling_url)).json.result.sample as string;
    clock.advance(5_999);
    expect((await download(sample, 'HEAD')).status).toBe(200);
    clock.advance(1);
    const expired = await download(sample);
    expect(expired.status).toBe(404);
    expect(expired.text).toContain('<Code>BlobNotFound</Code>');
  });

  it('signs afresh on each poll with sample.resign_on_poll', async () => {
    const { clock, emulator } = await setup({ sample: { resign_on_poll: true } });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'renewed' });
    clock.advance(12_000);
    const first = (await poll(answer.polling_url)).json.result.sample as string;
    clock.advance(500_000);
    const second = (await poll(answer.polling_url)).json.result.sample as string;
    expect(second).not.toBe(first);
    clock.advance(200_000);
    expect((await download(first)).status).toBe(403);
    expect((await download(second)).status).toBe(200);
    expect(emulator.stats().samples).toMatchObject({ fetched: 1, expired_before_download: 0 });
  });

  it('refuses a tampered or unsigned URL with 403, and a URL of a task it does not have with 404', async () => {
    const { clock, emulator } = await setup();
    const { sample } = await readySample(clock, emulator);
    const url = new URL(sample);
    const later = new URL(sample);
    later.searchParams.set('se', new Date(clock.now() + 86_400_000).toISOString());
    const unsigned = new URL(sample);
    unsigned.searchParams.delete('sig');
    for (const bad of [later.toString(), unsigned.toString()]) {
      const refused = await download(bad);
      expect([refused.status, refused.text.includes('<Code>AuthenticationFailed</Code>')]).toEqual([
        403,
        true,
      ]);
    }
    const otherFormat = sample.replace('sample.jpeg', 'sample.png');
    expect((await download(otherFormat)).status).toBe(403);
    const unknown = `${url.origin}/results/00000000-0000-4000-8000-000000000000/sample.jpeg${url.search}`;
    expect((await download(unknown)).status).toBe(403);
    expect((await download(`${url.origin}/results/nothing-here`)).status).toBe(404);
    expect((await bfl(emulator.url, url.pathname + url.search, { method: 'DELETE' })).status).toBe(405);
  });

  it('answers 404 BlobNotFound once the task is past its retention, even within the URL lifetime', async () => {
    const { clock, emulator } = await setup({ task_retention_seconds: 60 });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'brief' });
    clock.advance(12_000);
    const sample = (await poll(answer.polling_url)).json.result.sample as string;
    clock.advance(60_000);
    const gone = await download(sample);
    expect([gone.status, gone.text.includes('BlobNotFound')]).toEqual([404, true]);
  });
});

describe('download faults', () => {
  it('cuts a download short (fewer bytes than content-length) with truncate_download_rate 1', async () => {
    const { clock, emulator } = await setup({ faults: { truncate_download_rate: 1 } });
    const { sample } = await readySample(clock, emulator);
    await expect(download(sample)).rejects.toThrow();
    expect(emulator.stats().faults).toMatchObject({ truncated_download: 1 });
    expect(emulator.stats().samples).toMatchObject({ downloads: 0, fetched: 0 });
  });

  it('throttles a download to slow_download_kbps on the emulator clock', async () => {
    const clock = new ManualClock();
    const emulator = await startTestBfl(fixed({ faults: { slow_download_kbps: 8 } }), { clock });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'slow', width: 256, height: 256 });
    clock.advance(12_000);
    const sample = (await poll(answer.polling_url)).json.result.sample as string;
    let done = false;
    const pending = download(sample).then((result) => {
      done = true;
      return result;
    });
    // 8 kbps is 1,000 bytes a second: nothing completes until the clock moves. The clock moves only
    // once the throttled body has started (its first 20 ms tick armed): the sample is rendered
    // first, which on a loaded machine takes longer than any fixed number of turns.
    await vi.waitFor(() => expect(clock.pendingTimes()).toContain(clock.now() + 20), { timeout: 30_000 });
    expect(done).toBe(false);
    for (let i = 0; i < 400 && !done; i++) {
      clock.advance(1_000);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const image = await pending;
    expect(image.status).toBe(200);
    expect((await sharp(image.bytes).metadata()).width).toBe(256);
  });
});
