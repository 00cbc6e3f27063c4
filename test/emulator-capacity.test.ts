// The emulator keeps every task it acknowledged: 100,000 submits through the route handlers
// (HTTP would only add time), then every id is looked up in batches of 500 while the tasks run,
// after they finish and after they expire. None may ever be `not_found`.
import { describe, expect, it } from 'vitest';
import { parseEmulatorConfig } from '../emulator/apimart/config.js';
import { createContext, type ApiCall } from '../emulator/apimart/context.js';
import { handleSubmit } from '../emulator/apimart/routes/submit.js';
import { handleBatch } from '../emulator/apimart/routes/tasks.js';
import { ManualClock } from './support/emulator.js';

const TASKS = 100_000;

describe('capacity', () => {
  it(`keeps ${TASKS.toLocaleString('en')} acknowledged tasks, through completion and expiry`, async () => {
    const clock = new ManualClock();
    const config = parseEmulatorConfig({
      accounts: [{ id: 'acct_bulk', credits: 10 * TASKS, keys: [{ key: 'sk-bulk' }] }],
      generation: { queue_seconds: [1, 5], seconds: { '1K': [40, 55] }, failure_rate: 0.1 },
      result_ttl_seconds: 3_600,
    });
    const ctx = createContext(config, clock);
    ctx.resultBaseUrl = 'http://127.0.0.1:1/results';
    const key = ctx.keys.keys[0]!;
    const apiCall = (value: unknown): ApiCall => ({
      key,
      language: 'en',
      languageGiven: false,
      pathParam: '',
      body: { kind: 'json', value },
    });

    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const reply = (await handleSubmit(ctx, apiCall({ prompt: `prompt ${i}` }))) as {
        body: { data: { task_id: string }[] };
      };
      ids.push(reply.body.data[0]!.task_id);
      if (i % 1_000 === 0) clock.advance(1_000);
    }
    expect(new Set(ids).size).toBe(TASKS);

    const statusesOfAll = (): Map<string, number> => {
      const counts = new Map<string, number>();
      for (let start = 0; start < ids.length; start += 500) {
        const asked = ids.slice(start, start + 500);
        const reply = handleBatch(ctx, apiCall({ task_ids: asked })) as {
          body: { data: { id: string; status: string }[] };
        };
        expect(reply.body.data.map((item) => item.id)).toEqual(asked);
        for (const { status } of reply.body.data) counts.set(status, (counts.get(status) ?? 0) + 1);
      }
      return counts;
    };

    const running = statusesOfAll();
    expect(running.get('not_found')).toBeUndefined();
    expect((running.get('pending') ?? 0) + (running.get('processing') ?? 0)).toBeGreaterThan(0);

    clock.advance(60_000);
    const finished = statusesOfAll();
    expect([...finished.keys()].sort()).toEqual(['completed', 'failed']);
    expect((finished.get('completed') ?? 0) + (finished.get('failed') ?? 0)).toBe(TASKS);

    clock.advance(3_600_000);
    expect(statusesOfAll()).toEqual(new Map([['expired', TASKS]]));
    expect(ctx.store.size).toBe(TASKS);
  });
});
