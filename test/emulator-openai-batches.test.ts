// The OpenAI emulator's Batch API on a manual clock: each path of a batch's life (completed, failed
// validation for each kind of bad input, expired at expires_at and at a fraction, cancelled keeping
// what finished, every request failed), request_counts and timestamps along the way, the enqueued
// limit, 429s on create, create's own 400s, listing with pagination, and the ground truth.
import { describe, expect, it } from 'vitest';
import {
  api,
  download,
  fixed,
  getBatch,
  jsonl,
  line,
  linesOf,
  ManualClock,
  startBatch,
  startTestOpenAI,
  upload,
} from './emulator-openai-harness.js';
import type { OpenAIConfigOverrides } from '../emulator/openai/index.js';

async function setup(config: OpenAIConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestOpenAI(fixed(config), { clock });
  return { clock, emulator };
}

const seconds = (clock: ManualClock): number => Math.floor(clock.now() / 1000);

describe('a batch that completes', () => {
  it('goes validating -> in_progress -> finalizing -> completed with its counts and timestamps', async () => {
    const { clock, emulator } = await setup();
    const created = await startBatch(emulator, jsonl(5), { run: 'nightly', shard: '3' });
    expect(created).toMatchObject({
      object: 'batch',
      endpoint: '/v1/images/generations',
      completion_window: '24h',
      status: 'validating',
      created_at: seconds(clock),
      expires_at: seconds(clock) + 24 * 3600,
      in_progress_at: null,
      output_file_id: null,
      error_file_id: null,
      errors: null,
      request_counts: { total: 0, completed: 0, failed: 0 },
      metadata: { run: 'nightly', shard: '3' },
    });
    expect(created.id).toMatch(/^batch_[0-9a-f]{32}$/);

    clock.advance(10_000);
    let batch = await getBatch(emulator, created.id);
    expect(batch).toMatchObject({
      status: 'in_progress',
      in_progress_at: seconds(clock),
      model: 'gpt-image-1',
    });
    expect(batch.request_counts.total).toBe(5);

    clock.advance(100_000);
    batch = await getBatch(emulator, created.id);
    expect(batch.status).toBe('finalizing');
    expect(batch.request_counts).toEqual({ total: 5, completed: 5, failed: 0 });
    expect(batch.finalizing_at).not.toBeNull();
    expect(batch.output_file_id).toBeNull();

    clock.advance(5_000);
    batch = await getBatch(emulator, created.id);
    expect(batch).toMatchObject({ status: 'completed', error_file_id: null, completed_at: seconds(clock) });
    expect(batch.output_file_id).toMatch(/^file-[A-Za-z0-9]{22}$/);
    const output = await download(emulator, batch.output_file_id);
    expect(
      linesOf(output.body)
        .map((l) => l.custom_id)
        .sort(),
    ).toEqual(['item-0', 'item-1', 'item-2', 'item-3', 'item-4']);
    expect(emulator.stats().batches.completed).toBe(1);
  });

  it('counts requests as they finish, in time order', async () => {
    const { clock, emulator } = await setup();
    const created = await startBatch(emulator, jsonl(40));
    clock.advance(10_000 + 50_000);
    const half = (await getBatch(emulator, created.id)).request_counts.completed;
    expect(half).toBeGreaterThan(5);
    expect(half).toBeLessThan(35);
    clock.advance(50_000);
    expect((await getBatch(emulator, created.id)).request_counts.completed).toBe(40);
  });
});

describe('a batch that fails validation', () => {
  async function failedWith(content: string, config: OpenAIConfigOverrides = {}) {
    const { clock, emulator } = await setup(config);
    const created = await startBatch(emulator, content);
    expect(created.status).toBe('validating');
    clock.advance(10_000);
    const batch = await getBatch(emulator, created.id);
    expect(batch).toMatchObject({
      status: 'failed',
      failed_at: seconds(clock),
      in_progress_at: null,
      output_file_id: null,
      error_file_id: null,
      request_counts: { total: 0, completed: 0, failed: 0 },
    });
    return batch.errors.data as {
      code: string;
      line: number | null;
      message: string;
      param: string | null;
    }[];
  }

  it('names each line that is not JSON or lacks a field, with its line number', async () => {
    const errors = await failedWith(
      [
        line('a'),
        '{not json',
        JSON.stringify({ custom_id: 'b', method: 'POST', url: '/v1/images/generations' }),
        JSON.stringify({ method: 'POST', url: '/v1/images/generations', body: {} }),
      ].join('\n'),
    );
    expect(errors).toEqual([
      {
        code: 'invalid_json_line',
        line: 2,
        message: 'This line is not parseable as valid JSON.',
        param: null,
      },
      {
        code: 'missing_required_parameter',
        line: 3,
        message: "Missing required parameter: 'body'.",
        param: 'body',
      },
      {
        code: 'missing_required_parameter',
        line: 4,
        message: "Missing required parameter: 'custom_id'.",
        param: 'custom_id',
      },
    ]);
  });

  it('refuses duplicate custom_ids and a url other than the endpoint', async () => {
    const errors = await failedWith(
      [line('a'), line('a'), JSON.stringify({ ...JSON.parse(line('c')), url: '/v1/chat/completions' })].join(
        '\n',
      ),
    );
    expect(errors.map((e) => [e.code, e.line, e.param])).toEqual([
      ['duplicate_custom_id', 2, 'custom_id'],
      ['invalid_url', 3, 'url'],
    ]);
  });

  it('refuses more lines than max_requests_per_batch and more bytes than max_input_bytes', async () => {
    expect(
      (await failedWith(jsonl(4), { limits: { max_requests_per_batch: 3 } })).map((e) => e.code),
    ).toEqual(['too_many_requests']);
    expect((await failedWith(jsonl(4), { limits: { max_input_bytes: 100 } })).map((e) => e.code)).toEqual([
      'file_too_large',
    ]);
  });

  it('fails the batches fail_validation picks, whatever their input', async () => {
    const { clock, emulator } = await setup({ batches: { fail_validation: { rate: 0, batches: [1] } } });
    const first = await startBatch(emulator, jsonl(2));
    const second = await startBatch(emulator, jsonl(2));
    clock.advance(10_000);
    expect((await getBatch(emulator, first.id)).status).toBe('in_progress');
    expect((await getBatch(emulator, second.id)).status).toBe('failed');
  });

  it('fails a batch over the enqueued limit with token_limit_exceeded, and accepts it once the others ended', async () => {
    const { clock, emulator } = await setup({ limits: { enqueued: { unit: 'images', limit: 5 } } });
    const first = await startBatch(emulator, jsonl(4));
    const second = await startBatch(emulator, jsonl(2));
    clock.advance(10_000);
    expect((await getBatch(emulator, first.id)).status).toBe('in_progress');
    const refused = await getBatch(emulator, second.id);
    expect(refused.status).toBe('failed');
    expect(refused.errors.data).toEqual([
      expect.objectContaining({
        code: 'token_limit_exceeded',
        message: expect.stringMatching(/Limit: 5 enqueued images/),
      }),
    ]);
    clock.advance(100_000);
    const third = await startBatch(emulator, jsonl(2));
    clock.advance(10_000);
    expect((await getBatch(emulator, third.id)).status).toBe('in_progress');
  });
});

describe('a batch that expires', () => {
  it('at expire_at_fraction: the finished requests in the output file, the rest batch_expired in the error file', async () => {
    const { clock, emulator } = await setup({ batches: { expire_at_fraction: 0.6 } });
    const created = await startBatch(emulator, jsonl(10));
    clock.advance(10_000);
    const running = await getBatch(emulator, created.id);
    expect(running.expires_at).toBeLessThan(running.created_at + 24 * 3600);
    clock.advance(100_000);
    const batch = await getBatch(emulator, created.id);
    expect(batch).toMatchObject({
      status: 'expired',
      request_counts: { total: 10, completed: 6, failed: 0 },
    });
    expect(batch.expired_at).toBe(batch.expires_at);
    expect(batch.completed_at).toBeNull();
    const output = linesOf((await download(emulator, batch.output_file_id)).body);
    const errors = linesOf((await download(emulator, batch.error_file_id)).body);
    expect(output).toHaveLength(6);
    expect(errors).toHaveLength(4);
    for (const e of errors)
      expect(e).toMatchObject({
        response: null,
        error: {
          code: 'batch_expired',
          message: 'This request could not be executed before the completion window expired.',
        },
      });
    expect(new Set([...output, ...errors].map((l) => l.custom_id)).size).toBe(10);
  });

  it('at expires_at (24 h scaled) when the batch runs longer', async () => {
    const { clock, emulator } = await setup({
      time_scale: 0.001,
      batches: { batch_duration: [200_000, 200_000] },
    });
    const created = await startBatch(emulator, jsonl(20));
    clock.advance(86_400 + 1);
    const batch = await getBatch(emulator, created.id);
    expect(batch.status).toBe('expired');
    expect(batch.request_counts.completed).toBeGreaterThan(0);
    expect(batch.request_counts.completed).toBeLessThan(20);
  });
});

describe('a cancelled batch', () => {
  it('goes cancelling then cancelled, keeping what finished before the cancel', async () => {
    const { clock, emulator } = await setup();
    const created = await startBatch(emulator, jsonl(30));
    clock.advance(10_000 + 50_000);
    const cancelling = await api(emulator, `/v1/batches/${created.id}/cancel`, { method: 'POST' });
    expect(cancelling.status).toBe(200);
    expect(cancelling.json).toMatchObject({
      status: 'cancelling',
      cancelling_at: seconds(clock),
      cancelled_at: null,
    });
    const finished = cancelling.json.request_counts.completed as number;
    expect(finished).toBeGreaterThan(0);
    expect(finished).toBeLessThan(30);

    clock.advance(20_000);
    const batch = await getBatch(emulator, created.id);
    expect(batch).toMatchObject({ status: 'cancelled', cancelled_at: seconds(clock) });
    expect(batch.request_counts.completed).toBe(finished);
    const output = linesOf((await download(emulator, batch.output_file_id)).body);
    const errors = linesOf((await download(emulator, batch.error_file_id)).body);
    expect(output).toHaveLength(finished);
    expect(errors).toHaveLength(30 - finished);
    expect(errors.every((e) => e.error.code === 'batch_cancelled')).toBe(true);

    const again = await api(emulator, `/v1/batches/${created.id}/cancel`, { method: 'POST' });
    expect(again.status).toBe(400);
    expect(again.json.error.message).toBe("Cannot cancel a batch with status 'cancelled'.");
  });

  it('cancelled while validating: nothing ran, every request in the error file', async () => {
    const { clock, emulator } = await setup();
    const created = await startBatch(emulator, jsonl(3));
    await api(emulator, `/v1/batches/${created.id}/cancel`, { method: 'POST' });
    clock.advance(20_000);
    const batch = await getBatch(emulator, created.id);
    expect(batch).toMatchObject({ status: 'cancelled', in_progress_at: null, output_file_id: null });
    expect(linesOf((await download(emulator, batch.error_file_id)).body)).toHaveLength(3);
  });
});

describe('requests that fail', () => {
  it('all_requests_fail: the batch "completes" with every request in the error file and no output file', async () => {
    const { clock, emulator } = await setup({ batches: { all_requests_fail: { rate: 1, batches: [] } } });
    const created = await startBatch(emulator, jsonl(4));
    clock.advance(200_000);
    const batch = await getBatch(emulator, created.id);
    expect(batch).toMatchObject({
      status: 'completed',
      output_file_id: null,
      request_counts: { completed: 0, failed: 4 },
    });
    const errors = linesOf((await download(emulator, batch.error_file_id)).body);
    expect(errors).toHaveLength(4);
    for (const e of errors) {
      expect(e.error).toBeNull();
      expect(e.response).toMatchObject({ status_code: 500, body: { error: { type: 'server_error' } } });
      expect(e.id).toMatch(/^batch_req_[0-9a-f]{32}$/);
    }
  });

  it("moderation words and bad bodies fail their request alone, with OpenAI's 400 bodies", async () => {
    const { clock, emulator } = await setup();
    const content = [
      line('ok'),
      line('blocked', { prompt: 'a forbidden thing' }),
      line('bad', { size: '999x999' }),
    ].join('\n');
    const created = await startBatch(emulator, content);
    clock.advance(200_000);
    const batch = await getBatch(emulator, created.id);
    expect(batch.request_counts).toEqual({ total: 3, completed: 1, failed: 2 });
    const errors = Object.fromEntries(
      linesOf((await download(emulator, batch.error_file_id)).body).map((l) => [l.custom_id, l.response]),
    );
    expect(errors.blocked).toMatchObject({
      status_code: 400,
      body: { error: { code: 'moderation_blocked' } },
    });
    expect(errors.bad).toMatchObject({
      status_code: 400,
      body: { error: { type: 'invalid_request_error', param: 'size', code: 'invalid_value' } },
    });
  });

  it('request_failure_rate and moderation_rate draw each request alone', async () => {
    const { clock, emulator } = await setup({ batches: { request_failure_rate: 0.3, moderation_rate: 0.2 } });
    const created = await startBatch(emulator, jsonl(200));
    clock.advance(200_000);
    const { request_counts: counts } = await getBatch(emulator, created.id);
    expect(counts.completed + counts.failed).toBe(200);
    expect(counts.failed).toBeGreaterThan(50);
    expect(counts.failed).toBeLessThan(150);
  });
});

describe('POST /v1/batches', () => {
  it('answers 429 rate_limit_exceeded at create_429_rate, creating nothing', async () => {
    const { emulator } = await setup({ faults: { create_429_rate: 1 } });
    const file = await upload(emulator, jsonl(1));
    const response = await api(emulator, '/v1/batches', {
      body: { input_file_id: file.json.id, endpoint: '/v1/images/generations', completion_window: '24h' },
    });
    expect(response.status).toBe(429);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.json.error).toMatchObject({ code: 'rate_limit_exceeded', param: null });
    expect(emulator.stats()).toMatchObject({ batches_total: 0, faults: { create_batch_429: 1 } });
  });

  it('checks its parameters: 400 with the param, 404 for an unknown file', async () => {
    const { emulator } = await setup();
    const file = (await upload(emulator, jsonl(1))).json.id as string;
    const other = (await upload(emulator, '{}\n', { purpose: 'user_data', filename: 'x.jsonl' })).json
      .id as string;
    const create = (body: Record<string, unknown>) =>
      api(emulator, '/v1/batches', {
        body: { input_file_id: file, endpoint: '/v1/images/generations', completion_window: '24h', ...body },
      });
    const cases: [Record<string, unknown>, number, string | null][] = [
      [{ input_file_id: undefined }, 400, 'input_file_id'],
      [{ endpoint: '/v1/nope' }, 400, 'endpoint'],
      [{ completion_window: '48h' }, 400, 'completion_window'],
      [
        { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
        400,
        'metadata',
      ],
      [{ metadata: { k: 'v'.repeat(513) } }, 400, 'metadata.k'],
      [{ metadata: { k: 3 } }, 400, 'metadata.k'],
      [{ input_file_id: 'file-nope' }, 404, 'id'],
      [{ input_file_id: other }, 400, 'input_file_id'],
    ];
    for (const [body, status, param] of cases) {
      const response = await create(body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(response.json.error.param, JSON.stringify(body)).toBe(param);
      expect(response.json.error.type).toBe('invalid_request_error');
    }
    expect(emulator.stats().batches_total).toBe(0);
  });
});

describe('GET /v1/batches', () => {
  it('lists newest first with after, limit, has_more, first_id and last_id', async () => {
    const { emulator } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await startBatch(emulator, jsonl(1))).id);
    const first = await api(emulator, '/v1/batches?limit=2');
    expect(first.json).toMatchObject({ object: 'list', has_more: true, first_id: ids[4], last_id: ids[3] });
    expect(first.json.data.map((b: { id: string }) => b.id)).toEqual([ids[4], ids[3]]);
    const rest = await api(emulator, `/v1/batches?limit=10&after=${ids[3]}`);
    expect(rest.json.data.map((b: { id: string }) => b.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(rest.json.has_more).toBe(false);
    expect((await api(emulator, '/v1/batches?limit=0')).status).toBe(400);
    expect((await api(emulator, '/v1/batches/batch_nope')).status).toBe(404);
  });
});

describe('ground truth', () => {
  it('lists every accepted request line with its batch, and counts custom_ids sent twice', async () => {
    const { clock, emulator } = await setup();
    await startBatch(emulator, jsonl(3));
    await startBatch(emulator, `${line('item-1')}\n${line('other')}\n`);
    clock.advance(200_000);
    const truth = (await api(emulator, '/_emulator/requests', { key: null })).text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { custom_id: string; batch_index: number; ran: boolean });
    expect(truth).toHaveLength(5);
    expect(truth.filter((t) => t.custom_id === 'item-1').map((t) => t.batch_index)).toEqual([0, 1]);
    expect(truth.every((t) => t.ran)).toBe(true);
    expect(emulator.stats()).toMatchObject({ batch_requests: 5, custom_ids_sent_twice: 1 });
  });
});
