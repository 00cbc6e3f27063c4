// state_file: an emulator killed and started again keeps every task it acknowledged.
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';

describe('emulator state_file', () => {
  it('restores tasks, their credits and their future after a restart, skipping a torn last line', async () => {
    const stateFile = join(mkdtempSync(join(tmpdir(), 'pixelmill-journal-')), 'tasks.jsonl');
    const clock = new ManualClock();
    const config = {
      state_file: stateFile,
      accounts: [{ id: 'a', credits: 10, keys: [{ key: 'sk-live-a' }] }],
    };
    const first = await startTestEmulator(config, { clock });
    const taskIds = [
      await submitTask(first, 'sk-live-a', { prompt: 'one', n: 2 }),
      await submitTask(first, 'sk-live-a', { prompt: 'two' }),
    ];
    await first.close();
    appendFileSync(stateFile, '["task_torn", "a", "half a li'); // a kill mid-write

    const second = await startTestEmulator(config, { clock });
    clock.advance(200_000); // past every generation time
    for (const id of taskIds) {
      const task = await call(second.url, `/v1/tasks/${id}`, { key: 'sk-live-a' });
      expect(task.status).toBe(200);
      expect((task.json as { data: { status: string } }).data.status).toBe('completed');
    }
    expect(second.stats().credits_charged).toBe(3);
    // The balance survived too: 10 - 3 = 7 credits left, so 8 credits (2 x 4K) are refused, 4 are not.
    const submit = (n: number) =>
      call(second.url, '/v1/images/generations', {
        method: 'POST',
        key: 'sk-live-a',
        body: { prompt: 'x', n, resolution: '4K' },
      });
    expect((await submit(2)).status).toBe(402);
    expect((await submit(1)).status).toBe(200);
    expect(readFileSync(stateFile, 'utf8').trim().split('\n')).toHaveLength(4);
  });
});
