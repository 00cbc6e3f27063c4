// Retention of the Replicate emulator over real HTTP, on a manual clock: an hour (scaled by
// time_scale) after a prediction ends, its input, output and logs are removed (data_removed true,
// output null) and its files answer 404; the ground truth and the stats count the files removed
// before anyone downloaded them. Counted from creation instead when the knob says so.
import { describe, expect, it } from 'vitest';
import {
  api,
  create,
  getPrediction,
  ManualClock,
  startReplicate,
  T0,
  type Json,
} from './emulator-replicate-helpers.js';

const timing = { generation: { queue_seconds: 2, run_seconds: 3 } };

async function ndjson(url: string): Promise<Json[]> {
  const text = await (await fetch(url)).text();
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
}

describe('retention', () => {
  it('removes input, output, logs and files an hour after the end, and counts files never downloaded', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ ...timing, time_scale: 0.01 }, { clock });
    const fetched = await create(emulator, { input: { prompt: 'kept', num_outputs: 2 } });
    const forgotten = await create(emulator, { input: { prompt: 'lost', num_outputs: 3 } });
    clock.advance(50);
    const done = await getPrediction(emulator, fetched.id);
    expect(done.status).toBe('succeeded');
    for (const url of done.output) expect((await fetch(url)).status).toBe(200);
    const lostUrls: string[] = (await getPrediction(emulator, forgotten.id)).output;

    // An hour at time_scale 0.01 is 36 s of clock.
    clock.advance(35_999);
    expect((await getPrediction(emulator, fetched.id)).data_removed).toBe(false);
    clock.advance(1);
    const removed = await getPrediction(emulator, fetched.id);
    expect(removed).toMatchObject({
      status: 'succeeded',
      data_removed: true,
      input: {},
      output: null,
      logs: '',
      completed_at: '2026-01-01T00:00:00.050Z',
    });
    for (const url of [...done.output, ...lostUrls]) expect((await fetch(url)).status).toBe(404);
    const [entry] = (await api(emulator, '/v1/predictions')).json.results.filter(
      (p: Json) => p.id === fetched.id,
    );
    expect(entry).toMatchObject({ data_removed: true, output: null, input: {} });

    expect(emulator.stats()).toMatchObject({
      data_removed: 2,
      outputs: { files: 5, downloaded: 2, deleted_before_download: 3 },
    });
    const truth = await ndjson(`${emulator.url}/_emulator/predictions`);
    expect(truth).toEqual([
      expect.objectContaining({
        id: fetched.id,
        prompt: 'kept',
        downloaded: 2,
        deleted_before_download: 0,
        data_removed: true,
      }),
      expect.objectContaining({
        id: forgotten.id,
        prompt: 'lost',
        outputs: 3,
        downloaded: 0,
        deleted_before_download: 3,
        removed_at_ms: T0 + 50 + 36_000,
      }),
    ]);
  });

  it('removes a failed or canceled prediction’s data too, and counts from creation when told to', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate(
      { ...timing, retention: { seconds: 60, from: 'created' } },
      { clock },
    );
    const created = await create(emulator);
    const canceled = await create(emulator);
    await api(emulator, `/v1/predictions/${canceled.id}/cancel`, { method: 'POST' });
    clock.advance(59_999);
    expect((await getPrediction(emulator, created.id)).data_removed).toBe(false);
    clock.advance(1);
    expect(await getPrediction(emulator, created.id)).toMatchObject({ data_removed: true, output: null });
    expect(await getPrediction(emulator, canceled.id)).toMatchObject({
      status: 'canceled',
      data_removed: true,
    });
  });
});
