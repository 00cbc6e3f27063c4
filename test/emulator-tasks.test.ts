// The task state machine on a manual clock: pending -> processing -> completed | failed, the
// fields present in each state, refunds of failed tasks, expiry, and the languages of task errors
// and of GET and batch errors.
import { describe, expect, it } from 'vitest';
import { LANGUAGES, type Language } from '../common/generation.js';
import type { RunningEmulator } from '../emulator/index.js';
import { call, expectCatalogueText, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';

const KEY = 'sk-live-demo';
const SUBMIT = '/v1/images/generations';
/** Queue 2 s, generation 10 s at 1K, exactly, so every moment is predictable. */
const fixed = {
  generation: { queue_seconds: [2, 2] as [number, number], seconds: { '1K': [10, 10] as [number, number] } },
};

async function setup(config: Parameters<typeof startTestEmulator>[0] = {}) {
  const clock = new ManualClock();
  const emulator = await startTestEmulator({ ...fixed, ...config }, { clock });
  return { clock, emulator };
}

const submitOne = (emulator: RunningEmulator, body: object) => submitTask(emulator, KEY, body);

const get = (emulator: RunningEmulator, id: string, query = '') =>
  call(emulator.url, `/v1/tasks/${id}${query}`, { key: KEY });

describe('task states', () => {
  it('goes pending -> processing -> completed with fields only where the spec puts them', async () => {
    const { clock, emulator } = await setup();
    const t0 = clock.now();
    const id = await submitOne(emulator, { prompt: 'a lighthouse', n: 2, size: '3:2' });

    const pending = await get(emulator, id);
    expect(pending.json).toEqual({
      code: 200,
      data: {
        id,
        status: 'pending',
        progress: '0%',
        created: t0 / 1000,
        estimated_time: 12,
        credits_cost: 2,
      },
    });

    clock.advance(2000);
    expect((await get(emulator, id)).json.data).toMatchObject({ status: 'processing', progress: '0%' });
    clock.advance(5000);
    expect((await get(emulator, id)).json.data.progress).toBe('50%');
    clock.advance(4999);
    const almost = (await get(emulator, id)).json.data;
    expect(almost).toMatchObject({ status: 'processing', progress: '99%' });
    expect(Object.keys(almost).sort()).toEqual([
      'created',
      'credits_cost',
      'estimated_time',
      'id',
      'progress',
      'status',
    ]);

    clock.advance(1);
    const done = (await get(emulator, id)).json.data;
    const completed = (t0 + 12_000) / 1000;
    expect(done).toEqual({
      id,
      status: 'completed',
      progress: '100%',
      created: t0 / 1000,
      estimated_time: 12,
      completed,
      actual_time: 12,
      credits_cost: 2,
      result: {
        url: [`${emulator.resultBaseUrl}/${id}/0.png`, `${emulator.resultBaseUrl}/${id}/1.png`],
        expires_at: completed + 86_400,
        image_ids: [`img_${id.slice(5)}_0`, `img_${id.slice(5)}_1`],
      },
    });
    expect(emulator.stats().tasks).toEqual({
      pending: 0,
      processing: 0,
      completed: 1,
      failed: 0,
      expired: 0,
    });
  });

  it('scales every duration, the estimate and the TTL by time_scale', async () => {
    const { clock, emulator } = await setup({ time_scale: 0.5, result_ttl_seconds: 100 });
    const id = await submitOne(emulator, { prompt: 'x' });
    expect((await get(emulator, id)).json.data.estimated_time).toBe(6);
    clock.advance(5999);
    expect((await get(emulator, id)).json.data.status).toBe('processing');
    clock.advance(1);
    const done = (await get(emulator, id)).json.data;
    expect(done).toMatchObject({ status: 'completed', actual_time: 6 });
    expect(done.result.expires_at - done.completed).toBe(50);
  });

  it('keeps a lost task (faults.stuck_task_rate) processing for ever, uncharged, in GET and batch', async () => {
    const { clock, emulator } = await setup({ faults: { stuck_task_rate: 1 } });
    const id = await submitOne(emulator, { prompt: 'a lost job' });
    // Long past its generation time and any result TTL.
    clock.advance(10 * 24 * 3600 * 1000);
    const task = (await get(emulator, id)).json.data;
    expect(task).toMatchObject({ id, status: 'processing', credits_cost: 0 });
    expect(task.result).toBeUndefined();
    expect(Number.parseInt(task.progress, 10)).toBeLessThan(100);
    const batch = await call(emulator.url, '/v1/tasks/batch', { key: KEY, body: { task_ids: [id] } });
    expect(batch.json.data).toEqual([{ id, status: 'processing' }]);
    expect(emulator.injectedFaults().stuck_task).toBe(1);
  });

  it('expires a completed task after the TTL: GET 404 task_expired, batch expired, image 404', async () => {
    const { clock, emulator } = await setup({ result_ttl_seconds: 60 });
    const id = await submitOne(emulator, { prompt: 'short-lived' });
    clock.advance(12_000);
    const task = (await get(emulator, id)).json.data;
    const imagePath = new URL(task.result.url[0]).pathname;
    clock.advance(task.result.expires_at * 1000 - clock.now() - 1);
    expect((await get(emulator, id)).status).toBe(200);
    expect((await call(emulator.url, imagePath)).status).toBe(200);
    clock.advance(1);
    const expired = await get(emulator, id, '?language=ja');
    expect(expired.status).toBe(404);
    expect(expired.json.error).toMatchObject({
      type: 'not_found_error',
      code: 'task_expired',
      message: 'タスクの有効期限が切れています。',
    });
    const batch = await call(emulator.url, '/v1/tasks/batch', { key: KEY, body: { task_ids: [id] } });
    expect(batch.json.data).toEqual([{ id, status: 'expired' }]);
    const image = await call(emulator.url, imagePath);
    expect(image.status).toBe(404);
    expect(image.json.error.code).toBe('image_expired');
    expect(emulator.stats().tasks.expired).toBe(1);
  });

  it('expires completed and failed tasks 24 h x time_scale after completion by default', async () => {
    const { clock, emulator } = await setup({ time_scale: 0.5 });
    const t0 = clock.now();
    const done = await submitOne(emulator, { prompt: 'kept for half a day' });
    const failed = await submitOne(emulator, { prompt: 'a forbidden one' });
    const terminal = t0 + 6_000;
    const expiry = terminal + 86_400_000 * 0.5;
    clock.advance(terminal - t0);
    const task = (await get(emulator, done)).json.data;
    expect(task.result.expires_at).toBe(expiry / 1000);
    const imagePath = new URL(task.result.url[0]).pathname;
    /** HTTP statuses of GET (both tasks) and of the image, then the batch statuses of both. */
    const look = async () => [
      (await get(emulator, done)).status,
      (await get(emulator, failed)).status,
      (await call(emulator.url, imagePath)).status,
      ...(
        await call(emulator.url, '/v1/tasks/batch', { key: KEY, body: { task_ids: [done, failed] } })
      ).json.data.map((item: { status: string }) => item.status),
    ];

    clock.advance(expiry - terminal - 1);
    expect(await look()).toEqual([200, 200, 200, 'completed', 'failed']);
    clock.advance(1);
    expect(await look()).toEqual([404, 404, 404, 'expired', 'expired']);
    expect(emulator.stats().tasks_total).toBe(2);
  });

  it('fails tasks at their terminal moment with failure_rate 1, carrying only the failure fields, and refunds them', async () => {
    const { clock, emulator } = await setup({
      generation: { ...fixed.generation, failure_rate: 1 },
      accounts: [{ id: 'acct_demo', credits: 2, keys: [{ key: KEY }] }],
    });
    const t0 = clock.now();
    const id = await submitOne(emulator, { prompt: 'unlucky', n: 2 });
    expect((await get(emulator, id)).json.data).toMatchObject({ status: 'pending', credits_cost: 2 });
    expect((await call(emulator.url, SUBMIT, { key: KEY, body: { prompt: 'more' } })).status).toBe(402);
    expect(emulator.stats().credits_charged).toBe(2);

    clock.advance(12_000);
    const failed = (await get(emulator, id)).json.data;
    expect(failed).toEqual({
      id,
      status: 'failed',
      error: {
        message: 'Image generation failed. The credits have been refunded.',
        type: 'generation_error',
        code: 'generation_failed',
      },
      created: t0 / 1000,
      completed: (t0 + 12_000) / 1000,
      actual_time: 12,
      credits_cost: 0,
    });
    expect(emulator.stats()).toMatchObject({ credits_charged: 0, tasks: { failed: 1 } });
    // The refund is spendable again.
    expect((await call(emulator.url, SUBMIT, { key: KEY, body: { prompt: 'again', n: 2 } })).status).toBe(
      200,
    );
    // A failed task has no images.
    expect((await call(emulator.url, `/results/${id}/0.png`)).status).toBe(404);
  });

  it('fails a prompt with a blocked word (any case) as a content-policy error, unbilled', async () => {
    const { clock, emulator } = await setup({
      generation: { ...fixed.generation, blocked_words: ['forbidden', 'secret plan'] },
    });
    const blocked = await submitOne(emulator, { prompt: 'The FORBIDDEN fruit', language: 'ko' });
    const fine = await submitOne(emulator, { prompt: 'a permitted fruit' });
    clock.advance(12_000);
    const failed = (await get(emulator, blocked)).json.data;
    expect(failed.status).toBe('failed');
    expect(failed.error).toEqual({
      message: '프롬프트가 콘텐츠 정책에 의해 거부되었습니다. 크레딧은 차감되지 않았습니다.',
      type: 'content_policy_violation',
      param: 'prompt',
      code: 'content_blocked',
    });
    expect((await get(emulator, fine)).json.data.status).toBe('completed');
    expect(emulator.stats().credits_charged).toBe(1);
  });

  it('renders task errors in the GET language, else the submit language, else en; unsupported GET language is en', async () => {
    const { clock, emulator } = await setup({ generation: { ...fixed.generation, failure_rate: 1 } });
    const zh = await submitOne(emulator, { prompt: 'p', language: 'zh' });
    const plain = await submitOne(emulator, { prompt: 'p' });
    clock.advance(12_000);
    const message = async (id: string, query = '') =>
      (await get(emulator, id, query)).json.data.error.message as string;
    expect(await message(zh)).toBe('图片生成失败，积分已退还。');
    expect(await message(zh, '?language=ja')).toBe('画像の生成に失敗しました。クレジットは返金されました。');
    expect(await message(zh, '?language=fr')).toBe(
      'Image generation failed. The credits have been refunded.',
    );
    expect(await message(plain)).toBe('Image generation failed. The credits have been refunded.');
    expect(await message(plain, '?language=ko')).toBe('이미지 생성에 실패했습니다. 크레딧이 환불되었습니다.');
  });

  it('answers unknown, malformed and foreign-shaped ids with 404 task_not_found', async () => {
    const { emulator } = await setup();
    for (const id of [
      'task_00000000000000000000000000',
      'nope',
      'task_0000000000000000000000000U',
      '%E0%A4%A',
    ]) {
      const response = await get(emulator, id, '?language=xx');
      expect(response.status).toBe(404);
      expect(response.json.error).toMatchObject({ code: 'task_not_found', message: 'Task not found.' });
    }
  });

  it('writes GET and batch errors in each ?language, and in en for an unsupported or empty one', async () => {
    const { emulator } = await setup({
      accounts: [
        { id: 'acct_demo', keys: [{ key: KEY }] },
        { id: 'acct_other', keys: [{ key: 'sk-other' }] },
      ],
    });
    const theirs = await submitTask(emulator, 'sk-other', { prompt: 'not yours' });
    const cases: [string, Language][] = [
      ...LANGUAGES.map((language): [string, Language] => [language, language]),
      ['fr', 'en'],
      ['', 'en'],
    ];
    for (const [asked, language] of cases) {
      const query = `?language=${asked}`;
      const unknown = await get(emulator, 'task_00000000000000000000000000', query);
      expectCatalogueText(unknown.json.error.message, 'task_not_found', language);
      const foreign = await get(emulator, theirs, query);
      expect(foreign.status).toBe(403);
      expectCatalogueText(foreign.json.error.message, 'task_forbidden', language);
      const unauthorised = await call(emulator.url, `/v1/tasks/${theirs}${query}`, { key: 'sk-nobody' });
      expectCatalogueText(unauthorised.json.error.message, 'invalid_api_key', language);
      const batch = await call(emulator.url, `/v1/tasks/batch${query}`, { key: KEY, body: { task_ids: [] } });
      expect(batch.status).toBe(400);
      expectCatalogueText(batch.json.error.message, 'empty_task_ids', language);
    }
  });

  it('runs through the states in real time with a tiny time_scale', async () => {
    const emulator = await startTestEmulator({ time_scale: 0.002 });
    const id = await submitOne(emulator, { prompt: 'quick' });
    const seen: string[] = [];
    for (let i = 0; i < 500 && seen.at(-1) !== 'completed'; i++) {
      const status = (await get(emulator, id)).json.data.status as string;
      if (seen.at(-1) !== status) seen.push(status);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(seen.at(-1)).toBe('completed');
    expect(['pending', 'processing', 'completed'].filter((s) => seen.includes(s))).toEqual(seen);
  });
});
