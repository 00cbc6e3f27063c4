// The emulator's wrong result images, as real sharp sees them: each fault at rate 1 makes every
// completed task's images wrong in its own way, the same bytes on every download, counted once
// per task in its injected faults.
import sharp from 'sharp';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { call, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';

const KEY = 'sk-live-demo';
const fast = {
  generation: {
    queue_seconds: [0, 0] as [number, number],
    seconds: { '1K': [1, 1], '2K': [1, 1], '4K': [1, 1] } as const,
  },
};

/** The result image of one completed 16:9 task under `faults`, downloaded twice, and the counts. */
async function resultUnder(faults: Record<string, number>) {
  const clock = new ManualClock();
  const emulator = await startTestEmulator({ ...fast, faults }, { clock });
  const id = await submitTask(emulator, KEY, { prompt: 'a chair in a sunlit room', size: '16:9' });
  clock.advance(1000);
  const task = (await call(emulator.url, `/v1/tasks/${id}`, { key: KEY })).json.data;
  expect(task.status).toBe('completed');
  const download = async () => {
    const response = await request(task.result.url[0] as string);
    const body = Buffer.from(await response.body.arrayBuffer());
    expect(Number(response.headers['content-length'])).toBe(body.length);
    return { body, type: response.headers['content-type'] };
  };
  const first = await download();
  const again = await download();
  expect(again.body.equals(first.body)).toBe(true);
  return { ...first, faults: emulator.injectedFaults() };
}

describe('wrong result images', () => {
  it('wrong_aspect_image_rate: a square for a 16:9 request', async () => {
    const { body, faults } = await resultUnder({ wrong_aspect_image_rate: 1 });
    expect(await sharp(body).metadata()).toMatchObject({ format: 'png', width: 1024, height: 1024 });
    expect(faults.wrong_aspect_image).toBe(1);
  });

  it('blank_image_rate: one flat colour', async () => {
    const { body, faults } = await resultUnder({ blank_image_rate: 1 });
    const { channels } = await sharp(body).stats();
    expect(channels.map((channel) => channel.stdev)).toEqual([0, 0, 0]);
    expect(faults.blank_image).toBe(1);
  });

  it('corrupt_image_rate: a whole PNG file whose pixel data stops short', async () => {
    const { body, faults } = await resultUnder({ corrupt_image_rate: 1 });
    expect(await sharp(body).metadata()).toMatchObject({ format: 'png', width: 1024, height: 576 });
    await expect(sharp(body, { failOn: 'truncated' }).raw().toBuffer()).rejects.toThrow();
    expect(faults.corrupt_image).toBe(1);
  });

  it('jpeg_image_rate: JPEG bytes served as image/png', async () => {
    const { body, type, faults } = await resultUnder({ jpeg_image_rate: 1 });
    expect(type).toBe('image/png');
    expect(await sharp(body).metadata()).toMatchObject({ format: 'jpeg', width: 1024, height: 576 });
    expect(faults.jpeg_image).toBe(1);
  });
});
