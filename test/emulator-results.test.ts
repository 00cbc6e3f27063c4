// Result images on the emulator's result host: real PNGs of the requested aspect ratio and
// resolution, different per prompt and index, no auth needed, HEAD, 404s, and download faults.
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../emulator/index.js';
import { call, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';
import { request } from 'undici';

const KEY = 'sk-live-demo';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const fast = {
  generation: {
    queue_seconds: [0, 0] as [number, number],
    seconds: { '1K': [1, 1], '2K': [1, 1], '4K': [1, 1] } as const,
  },
};

async function finishedTask(emulator: RunningEmulator, clock: ManualClock, body: object) {
  const id = await submitTask(emulator, KEY, body);
  clock.advance(1000);
  const task = (await call(emulator.url, `/v1/tasks/${id}`, { key: KEY })).json.data;
  expect(task.status).toBe('completed');
  return task as { id: string; result: { url: string[] } };
}

async function download(url: string, method: 'GET' | 'HEAD' = 'GET') {
  const response = await request(url, { method });
  const body = Buffer.from(await response.body.arrayBuffer());
  return { status: response.statusCode, headers: response.headers, body };
}

function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
  expect(png.subarray(12, 16).toString('ascii')).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

describe('result images', () => {
  it.each([
    ['1:1', '1K', 1024, 1024],
    ['16:9', '1K', 1024, 576],
    ['9:16', '2K', 1152, 2048],
    ['2:3', '1K', 683, 1024],
    ['21:9', '4K', 4096, 1755],
  ])('serves %s at %s as a %ix%i PNG without Authorization', async (size, resolution, width, height) => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(fast, { clock });
    const task = await finishedTask(emulator, clock, { prompt: 'a teapot', size, resolution });
    const image = await download(task.result.url[0]!);
    expect(image.status).toBe(200);
    expect(image.headers['content-type']).toBe('image/png');
    expect(Number(image.headers['content-length'])).toBe(image.body.length);
    expect(pngSize(image.body)).toEqual({ width, height });
  });

  it('differs per prompt and per index, and is identical on every download', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(fast, { clock });
    const a = await finishedTask(emulator, clock, { prompt: 'a red fox', n: 2 });
    const b = await finishedTask(emulator, clock, { prompt: 'a blue whale' });
    const [a0, a0again, a1, b0] = await Promise.all(
      [a.result.url[0]!, a.result.url[0]!, a.result.url[1]!, b.result.url[0]!].map((u) => download(u)),
    );
    expect(a0!.body.equals(a0again!.body)).toBe(true);
    expect(a0!.body.equals(a1!.body)).toBe(false);
    expect(a0!.body.equals(b0!.body)).toBe(false);
  });

  it('renders a prompt as long as the body limit allows', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(fast, { clock });
    const task = await finishedTask(emulator, clock, { prompt: `${'y'.repeat(1_000_000)} tail` });
    const image = await download(task.result.url[0]!);
    expect(image.status).toBe(200);
    expect(pngSize(image.body)).toEqual({ width: 1024, height: 1024 });
  });

  it('answers HEAD with the headers only', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(fast, { clock });
    const task = await finishedTask(emulator, clock, { prompt: 'head' });
    const head = await download(task.result.url[0]!, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(Number(head.headers['content-length'])).toBeGreaterThan(100);
  });

  it('answers 404 for an index out of range, an unfinished task and an unknown task', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator({ generation: { queue_seconds: [5, 5] } }, { clock });
    const id = await submitTask(emulator, KEY, { prompt: 'x', n: 2 });
    for (const path of [
      `/results/${id}/0.png`,
      `/results/${id}/2.png`,
      '/results/task_00000000000000000000000000/0.png',
      `/results/${id}/00.png`,
      `/results/${id}`,
    ]) {
      const response = await call(emulator.url, path);
      expect(response.status).toBe(404);
      expect(response.json.error).toMatchObject({ type: 'not_found_error', code: 'image_not_found' });
    }
    expect((await call(emulator.url, `/results/${id}/0.png`, { method: 'POST', body: {} })).status).toBe(405);
  });

  it('writes a configured result_base_url into tasks and still serves /results itself', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator(
      { ...fast, result_base_url: 'https://cdn.example.test/img/' },
      { clock },
    );
    expect(emulator.resultBaseUrl).toBe('https://cdn.example.test/img');
    const task = await finishedTask(emulator, clock, { prompt: 'cdn' });
    expect(task.result.url[0]).toBe(`https://cdn.example.test/img/${task.id}/0.png`);
    const image = await download(`${emulator.url}/results/${task.id}/0.png`);
    expect(pngSize(image.body).width).toBe(1024);
  });

  it('cuts a download short under truncate_download_rate 1', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator({ ...fast, faults: { truncate_download_rate: 1 } }, { clock });
    const task = await finishedTask(emulator, clock, { prompt: 'cut' });
    const response = await request(task.result.url[0]!);
    const declared = Number(response.headers['content-length']);
    await expect(response.body.arrayBuffer()).rejects.toThrow();
    expect(declared).toBeGreaterThan(0);
  });
});
