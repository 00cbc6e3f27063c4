// The OpenAI emulator's Files API and the checks every request passes: Bearer auth (missing,
// unknown, disabled, another account's ids), uploads and their refusals, listing by purpose with
// after/limit/order, retrieve, delete, content of an upload, batch files listed as batch_output,
// unknown routes, and injected 5xx per request class.
import { describe, expect, it } from 'vitest';
import {
  api,
  DEMO_OPENAI_KEY,
  download,
  fixed,
  getBatch,
  jsonl,
  ManualClock,
  startBatch,
  startTestOpenAI,
  upload,
} from './emulator-openai-harness.js';
import type { OpenAIConfigOverrides } from '../emulator/openai/index.js';

const ACCOUNTS = {
  accounts: [
    { id: 'org-a', keys: [{ key: DEMO_OPENAI_KEY }, { key: 'sk-disabled', status: 'disabled' as const }] },
    { id: 'org-b', keys: [{ key: 'sk-other' }] },
  ],
};

async function setup(config: OpenAIConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestOpenAI(fixed({ ...ACCOUNTS, ...config }), { clock });
  return { clock, emulator };
}

describe('auth', () => {
  it("answers 401 in OpenAI's shape for a missing, unknown or disabled key, never echoing it", async () => {
    const { emulator } = await setup();
    const missing = await api(emulator, '/v1/files', { key: null });
    expect(missing.status).toBe(401);
    expect(missing.json.error).toMatchObject({ type: 'invalid_request_error', param: null, code: null });
    expect(missing.json.error.message).toMatch(/didn't provide an API key/);
    for (const key of ['sk-wrong-secret-value', 'sk-disabled']) {
      const refused = await api(emulator, '/v1/batches', { key });
      expect(refused.status).toBe(401);
      expect(refused.json.error).toMatchObject({ code: 'invalid_api_key' });
      expect(refused.text).not.toContain(key);
    }
    const basic = await api(emulator, '/v1/files', {
      key: null,
      headers: { authorization: `Basic ${DEMO_OPENAI_KEY}` },
    });
    expect(basic.status).toBe(401);
  });

  it("keeps accounts apart: another account's file is not found", async () => {
    const { emulator } = await setup();
    const id = (await upload(emulator, jsonl(1))).json.id as string;
    expect((await api(emulator, `/v1/files/${id}`, { key: 'sk-other' })).status).toBe(404);
    expect((await api(emulator, '/v1/files', { key: 'sk-other' })).json.data).toEqual([]);
  });
});

describe('POST /v1/files', () => {
  it('stores a .jsonl with purpose batch and answers the File object', async () => {
    const { clock, emulator } = await setup();
    const content = jsonl(3);
    const response = await upload(emulator, content, { filename: 'catalog.jsonl' });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({
      object: 'file',
      bytes: Buffer.byteLength(content),
      created_at: Math.floor(clock.now() / 1000),
      filename: 'catalog.jsonl',
      purpose: 'batch',
      status: 'processed',
    });
    expect(response.json.id).toMatch(/^file-[A-Za-z0-9]{22}$/);
    const got = await download(emulator, response.json.id);
    expect(got.body.toString()).toBe(content);
    expect((await api(emulator, `/v1/files/${response.json.id}`)).json).toEqual(response.json);
  });

  it('refuses a body that is not multipart, a missing or unknown purpose, a missing file, a batch file not .jsonl, and one too large', async () => {
    const { emulator } = await setup({ limits: { max_upload_bytes: 10_000 } });
    const notForm = await api(emulator, '/v1/files', { body: { purpose: 'batch' } });
    expect(notForm.status).toBe(400);
    const cases: [Parameters<typeof upload>[2], string][] = [
      [{ purpose: null }, 'purpose'],
      [{ purpose: 'pictures' }, 'purpose'],
      [{ filename: null }, 'file'],
      [{ filename: 'input.csv' }, 'file'],
    ];
    for (const [options, param] of cases) {
      const response = await upload(emulator, jsonl(1), options);
      expect(response.status, JSON.stringify(options)).toBe(400);
      expect(response.json.error.param).toBe(param);
    }
    const big = await upload(emulator, 'x'.repeat(20_000));
    expect(big.status).toBe(413);
    expect(big.json.error.code).toBe('file_too_large');
  });
});

describe('GET /v1/files and DELETE /v1/files/{id}', () => {
  it('lists by purpose, newest first, with after, limit, order, first_id, last_id and has_more', async () => {
    const { clock, emulator } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push((await upload(emulator, jsonl(1))).json.id as string);
      clock.advance(1000);
    }
    await upload(emulator, '{}', { purpose: 'user_data', filename: 'notes.json' });
    const page = await api(emulator, '/v1/files?purpose=batch&limit=3');
    expect(page.json).toMatchObject({ object: 'list', has_more: true, first_id: ids[3], last_id: ids[1] });
    const next = await api(emulator, `/v1/files?purpose=batch&limit=3&after=${ids[1]}`);
    expect(next.json.data.map((f: { id: string }) => f.id)).toEqual([ids[0]]);
    expect(next.json.has_more).toBe(false);
    const ascending = await api(emulator, '/v1/files?purpose=batch&order=asc');
    expect(ascending.json.data.map((f: { id: string }) => f.id)).toEqual(ids);
    expect((await api(emulator, '/v1/files')).json.data).toHaveLength(5);
    expect((await api(emulator, '/v1/files?limit=0')).status).toBe(400);
    expect((await api(emulator, '/v1/files?order=sideways')).status).toBe(400);
  });

  it('deletes a file: then retrieve, content and delete answer 404', async () => {
    const { emulator } = await setup();
    const id = (await upload(emulator, jsonl(1))).json.id as string;
    const deleted = await api(emulator, `/v1/files/${id}`, { method: 'DELETE' });
    expect(deleted.json).toEqual({ id, object: 'file', deleted: true });
    for (const [method, path] of [
      ['GET', `/v1/files/${id}`],
      ['GET', `/v1/files/${id}/content`],
      ['DELETE', `/v1/files/${id}`],
    ] as const) {
      const response = await api(emulator, path, { method });
      expect(response.status).toBe(404);
      expect(response.json.error).toMatchObject({
        message: `No such File object: ${id}`,
        type: 'invalid_request_error',
      });
    }
  });

  it("lists a batch's output and error files as batch_output once the batch has ended", async () => {
    const { clock, emulator } = await setup({ batches: { expire_at_fraction: 0.5 } });
    const created = await startBatch(emulator, jsonl(4));
    expect((await api(emulator, '/v1/files?purpose=batch_output')).json.data).toEqual([]);
    clock.advance(200_000);
    const batch = await getBatch(emulator, created.id);
    const listed = (await api(emulator, '/v1/files?purpose=batch_output')).json.data as {
      id: string;
      filename: string;
    }[];
    expect(listed.map((f) => f.id).sort()).toEqual([batch.output_file_id, batch.error_file_id].sort());
    expect(listed.every((f) => f.filename.startsWith(`batch_${created.id}_`))).toBe(true);
    expect((await api(emulator, `/v1/files/${batch.output_file_id}`, { key: 'sk-other' })).status).toBe(404);
  });
});

describe('routes and server faults', () => {
  it('answers an unknown route or method 404 "Invalid URL"', async () => {
    const { emulator } = await setup();
    const unknown = await api(emulator, '/v1/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.message).toBe('Invalid URL (GET /v1/nothing-here)');
    expect((await api(emulator, '/v1/batches', { method: 'DELETE' })).status).toBe(404);
    expect(emulator.stats().requests['GET (unmatched)']).toEqual({ '404': 1 });
  });

  it('answers 500/502/503 per request class at its own rate, before auth, the 502 and 503 not JSON', async () => {
    const { emulator } = await setup({ faults: { server_error_rate: { files: 1 } } });
    const statuses = new Set<number>();
    for (let i = 0; i < 30; i++) {
      const response = await api(emulator, '/v1/files', { key: null });
      statuses.add(response.status);
      if (response.status !== 500) expect(response.json).toBeUndefined();
    }
    expect([...statuses].sort()).toEqual([500, 502, 503]);
    expect((await api(emulator, '/v1/batches')).status).toBe(200);
    expect(emulator.stats().faults).toEqual({ server_error_files: 30 });
  });
});
