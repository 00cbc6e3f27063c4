// The emulator's Idempotency-Key on submit: a repeat of key and body answers with the first task
// and charges once, another body with the same key is a 409, keys survive a restart (state_file)
// and are forgotten after idempotency.ttl_seconds; switched off, every submit is a new task.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ImageApiClient } from '../providers/apimart/index.js';
import { call, expectCatalogueText, ManualClock, startTestEmulator } from './support/emulator.js';

const KEY = 'sk-live-a';
const account = { accounts: [{ id: 'a', credits: 100, keys: [{ key: KEY }] }] };
const body = { prompt: 'a chair in a sunlit room', resolution: '2K' };

function submit(url: string, idempotencyKey: string | undefined, request: object = body) {
  return call(url, '/v1/images/generations', {
    key: KEY,
    body: request,
    ...(idempotencyKey !== undefined ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
  });
}
const taskIdOf = (response: { json: { data: { task_id: string }[] } }) => response.json.data[0]!.task_id;

describe('emulator Idempotency-Key', () => {
  it('answers a repeat of key and body with the first task, charging once', async () => {
    const emulator = await startTestEmulator(account);
    try {
      const first = await submit(emulator.url, 'k-1');
      // The same request, its JSON written differently: the same request all the same.
      const again = await submit(emulator.url, 'k-1', {
        resolution: '2K',
        prompt: 'a chair in a sunlit room',
      });
      expect(first.status).toBe(200);
      expect(again.status).toBe(200);
      expect(taskIdOf(again)).toBe(taskIdOf(first));
      const other = await submit(emulator.url, 'k-2');
      const none = [await submit(emulator.url, undefined), await submit(emulator.url, undefined)];
      const ids = new Set([first, other, ...none].map(taskIdOf));
      expect(ids.size).toBe(4);
      const stats = emulator.stats();
      expect(stats.tasks_total).toBe(4);
      expect(stats.credits_charged).toBe(8);
      expect(stats.idempotent_replays).toBe(1);
    } finally {
      await emulator.close();
    }
  });

  it('refuses the key with another body: 409 with the error envelope', async () => {
    const emulator = await startTestEmulator(account);
    try {
      expect((await submit(emulator.url, 'k-1')).status).toBe(200);
      const conflict = await submit(emulator.url, 'k-1', { ...body, n: 2 });
      expect(conflict.status).toBe(409);
      expect(conflict.json.error.type).toBe('idempotency_error');
      expect(conflict.json.error.code).toBe('idempotency_key_reused');
      expectCatalogueText(conflict.json.error.message, 'idempotency_key_reused', 'en');
      const tooLong = await submit(emulator.url, 'k'.repeat(256));
      expect(tooLong.status).toBe(400);
      expect(tooLong.json.error.code).toBe('invalid_idempotency_key');
      expect(emulator.stats().tasks_total).toBe(1);
    } finally {
      await emulator.close();
    }
  });

  it('remembers keys across a restart, and forgets them after the ttl', async () => {
    const stateFile = join(mkdtempSync(join(tmpdir(), 'pixelmill-idempotency-')), 'tasks.jsonl');
    const clock = new ManualClock();
    const config = { ...account, state_file: stateFile, idempotency: { ttl_seconds: 3600 } };
    const first = await startTestEmulator(config, { clock });
    const taskId = taskIdOf(await submit(first.url, 'k-1'));
    await first.close();

    const second = await startTestEmulator(config, { clock });
    try {
      expect(taskIdOf(await submit(second.url, 'k-1'))).toBe(taskId);
      clock.advance(3_600_000);
      expect(taskIdOf(await submit(second.url, 'k-1'))).not.toBe(taskId);
    } finally {
      await second.close();
    }
  });

  it('makes every submit a new task when switched off', async () => {
    const emulator = await startTestEmulator({ ...account, idempotency: { enabled: false } });
    try {
      const ids = [await submit(emulator.url, 'k-1'), await submit(emulator.url, 'k-1')].map(taskIdOf);
      expect(new Set(ids).size).toBe(2);
    } finally {
      await emulator.close();
    }
  });

  it('lets a client whose answer was lost take its task by submitting again with the key', async () => {
    // Every submit's answer is lost: the task exists, the client only sees the connection close.
    const emulator = await startTestEmulator({ ...account, faults: { lost_submit_response_rate: 1 } });
    const client = new ImageApiClient({ apiKey: KEY, baseUrl: emulator.url });
    try {
      const request = { prompt: body.prompt, resolution: '2K' as const };
      for (let attempt = 0; attempt < 3; attempt++) {
        await expect(client.submit(request, { idempotencyKey: 'k-lost' })).rejects.toMatchObject({
          outcomeUnknown: true,
        });
      }
      expect(emulator.stats().tasks_total).toBe(1);
      expect(emulator.stats().credits_charged).toBe(2);
      expect(emulator.injectedFaults().lost_submit_response).toBe(3);
    } finally {
      await client.close();
      await emulator.close();
    }
  });
});
