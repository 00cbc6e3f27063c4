// How close clients come to losing results to retention (issue 39: "each result is stored within
// a small fraction of its provider's retention"): core's retentionShare, ready to first fetch over
// the time the result is kept, max and p99; then each provider emulator's stats endpoint, over
// real HTTP on a manual clock, fetching results at known moments of their retention.
import { describe, expect, it } from 'vitest';
import { retentionShare, type ResultFetch } from '../emulator/core/index.js';
import { ManualClock } from './support/emulator.js';
import { fixed, poll, startTestBfl, submit as submitBfl } from './support/emulator-bfl.js';
import { fal, startFal, submit as submitFal } from './emulator-fal-harness.js';
import { create, getPrediction, startReplicate, T0 } from './emulator-replicate-helpers.js';

describe('retentionShare', () => {
  it('divides ready-to-fetch by the retention, and gives the largest and the 99th percentile (nearest rank)', () => {
    // 200 results kept 1,000 ms, fetched 1, 2, ..., 200 ms after ready: p99 is the 198th.
    const fetches: ResultFetch[] = Array.from({ length: 200 }, (_, i) => ({
      readyAt: 5_000,
      fetchedAt: 5_000 + i + 1,
      retentionMs: 1_000,
    }));
    expect(retentionShare(fetches)).toEqual({ results: 200, max: 0.2, p99: 0.198 });
  });

  it('is null with nothing fetched, counts a fetch at ready (or before, by a clock step) as 0, skips a zero retention', () => {
    expect(retentionShare([])).toEqual({ results: 0, max: null, p99: null });
    expect(
      retentionShare([
        { readyAt: 10, fetchedAt: 10, retentionMs: 100 },
        { readyAt: 10, fetchedAt: 9, retentionMs: 100 },
        { readyAt: 10, fetchedAt: 20, retentionMs: 0 },
        { readyAt: 10, fetchedAt: 20, retentionMs: Infinity },
      ]),
    ).toEqual({ results: 3, max: 0, p99: 0 });
  });

  it('rounds to a millionth, so a millisecond of a compressed 10-minute retention still shows', () => {
    // BFL's 600 s at time_scale 0.2: 120,000 ms; one of them is 8.3e-6 of it.
    expect(retentionShare([{ readyAt: 0, fetchedAt: 1, retentionMs: 120_000 }])).toEqual({
      results: 1,
      max: 0.000008,
      p99: 0.000008,
    });
  });
});

/** `GET /_emulator/stats` over HTTP, as a benchmark reads it. */
async function statsOf(url: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}/_emulator/stats`);
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

async function download(url: string): Promise<number> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status;
}

describe("the providers' stats endpoints", () => {
  it("BFL: Ready to the sample's first whole download, over the sample URL's ten minutes", async () => {
    const clock = new ManualClock();
    // Queue 2 s, generation 10 s: Ready 12 s after the submit; sample URLs 600 s, tasks kept an hour.
    const emulator = await startTestBfl(fixed(), { clock });
    const early = await submitBfl(emulator, 'flux-pro-1.1', { prompt: 'early' });
    const late = await submitBfl(emulator, 'flux-pro-1.1', { prompt: 'late' });
    await submitBfl(emulator, 'flux-pro-1.1', { prompt: 'never downloaded' });
    clock.advance(12_000);
    const sampleOf = async (task: { polling_url: string }): Promise<string> =>
      (await poll(task.polling_url)).json.result.sample as string;
    const earlySample = await sampleOf(early);
    const lateSample = await sampleOf(late);
    clock.advance(60_000);
    expect(await download(earlySample)).toBe(200);
    clock.advance(300_000);
    expect(await download(lateSample)).toBe(200);
    // A second download does not move the first.
    clock.advance(60_000);
    expect(await download(lateSample)).toBe(200);
    expect((await statsOf(emulator.url)).samples).toMatchObject({
      fetched: 2,
      ready_to_fetch_share: { results: 2, max: 0.6, p99: 0.6 },
    });
    // The unfetched task's URL expires: lost, and still not among the shares.
    clock.advance(600_000);
    expect((await statsOf(emulator.url)).samples).toMatchObject({
      expired_before_download: 1,
      ready_to_fetch_share: { results: 2, max: 0.6 },
    });
  });

  it('fal: COMPLETED to the first fetch of the result, over its result retention', async () => {
    const clock = new ManualClock();
    const emulator = await startFal(
      {
        concurrency: 2,
        generation: { queue_seconds: [0, 0] },
        models: { 'fal-ai/flux/dev': { seconds: [10, 10] } },
        retention: { result_seconds: 1000 },
      },
      clock,
    );
    const first = await submitFal(emulator, { prompt: 'first' });
    const second = await submitFal(emulator, { prompt: 'second' });
    clock.advance(10_000 + 50_000);
    expect((await fal(emulator.url, first.response_url)).status).toBe(200);
    clock.advance(200_000);
    expect((await fal(emulator.url, second.response_url)).status).toBe(200);
    // A second fetch does not move the first.
    clock.advance(100_000);
    expect((await fal(emulator.url, first.response_url)).status).toBe(200);
    expect((await statsOf(emulator.url)).retention).toMatchObject({
      results_fetched: 2,
      ready_to_fetch_share: { results: 2, max: 0.25, p99: 0.25 },
    });
  });

  it("Replicate: completion to the outputs' whole download, over the hour until they are removed", async () => {
    const clock = new ManualClock(T0);
    // time_scale 0.01: queue 20 ms, run 30 ms, the hour 36 s of clock.
    const emulator = await startReplicate(
      { generation: { queue_seconds: 2, run_seconds: 3 }, time_scale: 0.01 },
      { clock },
    );
    const two = await create(emulator, { input: { prompt: 'two outputs', num_outputs: 2 } });
    const one = await create(emulator, { input: { prompt: 'one output' } });
    clock.advance(50);
    const [a, b] = (await getPrediction(emulator, two.id)).output as string[];
    const [c] = (await getPrediction(emulator, one.id)).output as string[];
    clock.advance(3_600);
    expect(await download(a!)).toBe(200);
    expect(await download(c!)).toBe(200);
    // The prediction's result is in hand once its last output is: 9 s of the 36.
    clock.advance(5_400);
    expect(await download(b!)).toBe(200);
    const stats = await statsOf(emulator.url);
    expect(stats.outputs).toMatchObject({
      downloaded: 3,
      ready_to_fetch_share: { results: 2, max: 0.25, p99: 0.25 },
    });
    const truth = (await (await fetch(`${emulator.url}/_emulator/predictions`)).text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; result_fetched_at_ms: number | null });
    expect(truth.map((line) => [line.id, line.result_fetched_at_ms])).toEqual([
      [two.id, T0 + 50 + 3_600 + 5_400],
      [one.id, T0 + 50 + 3_600],
    ]);
  });
});
