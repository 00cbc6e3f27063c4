// GET /v1/get_result on a manual clock: Pending (progress while generating), Ready with its result,
// Error, Request Moderated (before generation) and Content Moderated (after), stuck tasks,
// "Task not found" for unknown ids and after retention (200, or 404 by the knob), the 422 for a
// missing id, and the optional x-key check.
import { describe, expect, it } from 'vitest';
import { bfl, DEMO_BFL_KEY, fixed, ManualClock, poll, startTestBfl, submit } from './support/emulator-bfl.js';
import type { BflConfigOverrides } from '../emulator/bfl/index.js';

async function setup(config: BflConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestBfl(fixed(config), { clock });
  return { clock, emulator };
}

describe('a task from Pending to Ready', () => {
  it('is Pending with progress null while queued, a fraction while generating, then Ready with its result', async () => {
    const { clock, emulator } = await setup();
    const t0 = clock.now();
    const answer = await submit(emulator, 'flux-pro-1.1', {
      prompt: 'a lighthouse',
      seed: 42,
      width: 512,
      height: 256,
    });
    const queued = await poll(answer.polling_url);
    expect([queued.status, queued.json]).toEqual([
      200,
      { id: answer.id, status: 'Pending', result: null, progress: null, details: null, preview: null },
    ]);
    clock.advance(2_000);
    expect((await poll(answer.polling_url)).json).toMatchObject({ status: 'Pending', progress: 0 });
    clock.advance(2_500);
    expect((await poll(answer.polling_url)).json).toMatchObject({ status: 'Pending', progress: 0.25 });
    clock.advance(7_499);
    expect((await poll(answer.polling_url)).json).toMatchObject({ status: 'Pending', progress: 0.99 });
    clock.advance(1);
    const ready = (await poll(answer.polling_url)).json;
    expect(ready).toEqual({
      id: answer.id,
      status: 'Ready',
      result: {
        sample: expect.stringMatching(
          new RegExp(`^${emulator.url}/results/${answer.id}/sample\\.jpeg\\?se=`),
        ),
        prompt: 'a lighthouse',
        seed: 42,
        start_time: (t0 + 2_000) / 1000,
        end_time: (t0 + 12_000) / 1000,
        duration: 10,
      },
      progress: null,
      details: null,
      preview: null,
    });
    expect(emulator.stats().tasks).toMatchObject({ Ready: 1, Pending: 0 });
  });

  it('draws a seed for a request without one, the same for the same config seed', async () => {
    const seeds: number[] = [];
    for (const seed of [7, 7, 8]) {
      const { clock, emulator } = await setup({ seed });
      const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'unseeded' });
      clock.advance(12_000);
      seeds.push((await poll(answer.polling_url)).json.result.seed);
    }
    expect(seeds[0]).toBe(seeds[1]);
    expect(seeds[0]).not.toBe(seeds[2]);
    expect(Number.isInteger(seeds[0])).toBe(true);
  });
});

describe('failures', () => {
  it('ends in Error at the end of generation with failure_rate 1', async () => {
    const { clock, emulator } = await setup({ generation: { failure_rate: 1 } });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'doomed' });
    clock.advance(11_999);
    expect((await poll(answer.polling_url)).json.status).toBe('Pending');
    clock.advance(1);
    expect((await poll(answer.polling_url)).json).toEqual({
      id: answer.id,
      status: 'Error',
      result: null,
      progress: null,
      details: { error: 'Generation failed' },
      preview: null,
    });
  });

  it('moderates a blocked request word before generation, and a blocked content word after it', async () => {
    const { clock, emulator } = await setup({
      generation: { request_moderation_words: ['Forbidden'], content_moderation_words: ['unseemly'] },
    });
    const request = await submit(emulator, 'flux-pro-1.1', { prompt: 'a FORBIDDEN door' });
    const content = await submit(emulator, 'flux-pro-1.1', { prompt: 'an unseemly scene' });
    clock.advance(2_000);
    expect((await poll(request.polling_url)).json).toEqual({
      id: request.id,
      status: 'Request Moderated',
      result: null,
      progress: null,
      details: { 'Moderation Reasons': ['Input prompt'] },
      preview: null,
    });
    expect((await poll(content.polling_url)).json.status).toBe('Pending');
    clock.advance(10_000);
    expect((await poll(content.polling_url)).json).toMatchObject({
      status: 'Content Moderated',
      details: { 'Moderation Reasons': ['Generated image'] },
    });
    expect(emulator.stats().tasks).toMatchObject({ 'Request Moderated': 1, 'Content Moderated': 1 });
  });

  it('moderates by rate as well as by word', async () => {
    const { clock, emulator } = await setup({ generation: { content_moderation_rate: 1 } });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'innocent' });
    clock.advance(12_000);
    expect((await poll(answer.polling_url)).json.status).toBe('Content Moderated');
    const other = await setup({ generation: { request_moderation_rate: 1 } });
    const flagged = await submit(other.emulator, 'flux-pro-1.1', { prompt: 'innocent' });
    other.clock.advance(2_000);
    expect((await poll(flagged.polling_url)).json.status).toBe('Request Moderated');
  });

  it('keeps a stuck task Pending forever', async () => {
    const { clock, emulator } = await setup({ faults: { stuck_task_rate: 1 } });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'lost in the queue' });
    clock.advance(30 * 24 * 3600_000);
    expect((await poll(answer.polling_url)).json).toMatchObject({ status: 'Pending', progress: 0 });
    const truth = await bfl(emulator.url, '/_emulator/tasks');
    expect(JSON.parse(truth.text.trim())).toMatchObject({ id: answer.id, stuck: true, ended_at_ms: null });
  });
});

describe('Task not found', () => {
  it('answers 200 "Task not found" for an id never given out, and for a task past its retention', async () => {
    const { clock, emulator } = await setup();
    const unknown = await bfl(emulator.url, '/v1/get_result?id=00000000-0000-4000-8000-000000000000');
    expect([unknown.status, unknown.json]).toEqual([
      200,
      {
        id: '00000000-0000-4000-8000-000000000000',
        status: 'Task not found',
        result: null,
        progress: null,
        details: null,
        preview: null,
      },
    ]);
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'short-lived' });
    clock.advance(12_000 + 3_600_000 - 1);
    expect((await poll(answer.polling_url)).json.status).toBe('Ready');
    clock.advance(1);
    expect((await poll(answer.polling_url)).json).toMatchObject({ id: answer.id, status: 'Task not found' });
    expect(emulator.stats().tasks).toMatchObject({ 'Task not found': 1, Ready: 0 });
  });

  it('answers 404 instead with task_not_found_status: 404, and scales retention with time_scale', async () => {
    const { clock, emulator } = await setup({ task_not_found_status: 404, time_scale: 0.5 });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'p' });
    clock.advance(6_000 + 1_800_000);
    const gone = await poll(answer.polling_url);
    expect([gone.status, gone.json.status]).toEqual([404, 'Task not found']);
  });

  it('answers FastAPI 422 when the id is missing', async () => {
    const { emulator } = await setup();
    const response = await bfl(emulator.url, '/v1/get_result');
    expect([response.status, response.json]).toEqual([
      422,
      { detail: [{ type: 'missing', loc: ['query', 'id'], msg: 'Field required', input: null }] },
    ]);
  });
});

describe('auth on get_result', () => {
  it('needs no key, as the OpenAPI document declares, unless auth.get_result_requires_key', async () => {
    const open = await setup();
    const answer = await submit(open.emulator, 'flux-pro-1.1', { prompt: 'p' });
    expect((await bfl('', answer.polling_url)).status).toBe(200);
    const closed = await setup({ auth: { get_result_requires_key: true } });
    const other = await submit(closed.emulator, 'flux-pro-1.1', { prompt: 'p' });
    expect((await bfl('', other.polling_url)).json).toEqual({ detail: 'Not authenticated' });
    expect((await bfl('', other.polling_url, { key: 'nope' })).status).toBe(403);
    expect((await bfl('', other.polling_url, { key: DEMO_BFL_KEY })).status).toBe(200);
  });
});
