// GET /v1/predictions over real HTTP: 100 a page, newest first, `next`/`previous` cursor URLs that
// keep the filters, created_after (at or after) and created_before (before), list entries without
// logs (and without output when the knob says so), only the caller's predictions, and a cursor
// that does not decode answered 404 "Invalid cursor".
import { describe, expect, it } from 'vitest';
import type { RunningReplicateEmulator } from '../emulator/replicate/index.js';
import {
  api,
  create,
  ManualClock,
  startReplicate,
  T0,
  TOKEN,
  type Json,
} from './emulator-replicate-helpers.js';

/** Follows `next` from the first page (or `previous` from `start`) and returns the pages' ids. */
async function walk(
  emulator: RunningReplicateEmulator,
  start: string,
  link: 'next' | 'previous',
): Promise<string[][]> {
  const pages: string[][] = [];
  let url: string | null = start;
  while (url) {
    const response = await api(emulator, url.slice(emulator.url.length));
    expect(response.status, response.text).toBe(200);
    pages.push(response.json.results.map((p: Json) => p.id));
    url = response.json[link];
  }
  return pages;
}

async function createMany(
  emulator: RunningReplicateEmulator,
  clock: ManualClock,
  count: number,
  stepMs = 1000,
) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push((await create(emulator, { input: { prompt: `item ${i}` } })).id);
    clock.advance(stepMs);
  }
  return ids;
}

describe('list', () => {
  it('answers 100 a page, newest first, with next and previous URLs that walk every prediction once', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ generation: { queue_seconds: 1, run_seconds: 1 } }, { clock });
    const ids = await createMany(emulator, clock, 250);
    const first = await api(emulator, '/v1/predictions');
    expect(first.json.previous).toBeNull();
    expect(first.json.next).toMatch(new RegExp(`^${emulator.url}/v1/predictions\\?cursor=[A-Za-z0-9%]+$`));
    const forward = await walk(emulator, `${emulator.url}/v1/predictions`, 'next');
    expect(forward.map((page) => page.length)).toEqual([100, 100, 50]);
    expect(forward.flat()).toEqual([...ids].reverse());
    // From the last page back to the first.
    const last = await api(emulator, new URL(first.json.next).pathname + new URL(first.json.next).search);
    const lastPage = await api(emulator, new URL(last.json.next).pathname + new URL(last.json.next).search);
    expect(lastPage.json.next).toBeNull();
    const backward = await walk(emulator, lastPage.json.previous, 'previous');
    expect(backward).toEqual([forward[1], forward[0]]);
  });

  it('keeps its pages when predictions are created between two requests', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ list: { page_size: 3 } }, { clock });
    const ids = await createMany(emulator, clock, 7);
    const first = await api(emulator, '/v1/predictions');
    await createMany(emulator, clock, 2);
    const second = await api(emulator, first.json.next.slice(emulator.url.length));
    expect(second.json.results.map((p: Json) => p.id)).toEqual([ids[3], ids[2], ids[1]]);
  });

  it('walks predictions created at the same instant once each', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ list: { page_size: 4 } }, { clock });
    const ids = await createMany(emulator, clock, 11, 0);
    const pages = await walk(emulator, `${emulator.url}/v1/predictions`, 'next');
    expect(pages.flat()).toEqual([...ids].reverse());
  });

  it('filters by created_after (inclusive) and created_before (exclusive), and keeps the filters in its links', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ list: { page_size: 2 } }, { clock });
    const ids = await createMany(emulator, clock, 10);
    const query = '?created_after=2026-01-01T00:00:03Z&created_before=2026-01-01T00:00:08.000Z';
    const first = await api(emulator, `/v1/predictions${query}`);
    expect(first.json.next).toContain('created_after=2026-01-01T00%3A00%3A03Z');
    expect(first.json.next).toContain('created_before=');
    const pages = await walk(emulator, `${emulator.url}/v1/predictions${query}`, 'next');
    expect(pages.flat()).toEqual(ids.slice(3, 8).reverse());
    const offset = await api(emulator, '/v1/predictions?created_after=2026-01-01T01:00:06%2B01:00');
    expect(offset.json.results.map((p: Json) => p.id)).toEqual([ids[9], ids[8]]);
    const bad = await api(emulator, '/v1/predictions?created_after=yesterday');
    expect(bad.status).toBe(400);
  });

  it('lists entries without logs, with the output, and without it when include_output is off', async () => {
    const clock = new ManualClock(T0);
    const emulator = await startReplicate({ generation: { queue_seconds: 1, run_seconds: 1 } }, { clock });
    const created = await create(emulator);
    clock.advance(2_000);
    const [entry] = (await api(emulator, '/v1/predictions')).json.results;
    expect(entry).toMatchObject({ id: created.id, status: 'succeeded', output: [expect.any(String)] });
    expect(entry).not.toHaveProperty('logs');

    const bare = await startReplicate({ list: { include_output: false, include_logs: true } }, { clock });
    await create(bare);
    const [other] = (await api(bare, '/v1/predictions')).json.results;
    expect(other).not.toHaveProperty('output');
    expect(other).toHaveProperty('logs');
  });

  it('lists only the caller’s predictions, nothing for source=web, and 404 for a cursor that does not decode', async () => {
    const emulator = await startReplicate({
      accounts: [
        { username: 'a', tokens: [TOKEN], webhook_secret: 'whsec_YQ==', credit_usd: 10 },
        { username: 'b', tokens: ['r8_b'], webhook_secret: 'whsec_Yg==', credit_usd: 10 },
      ],
    });
    const mine = await create(emulator);
    await create(emulator, undefined, { token: 'r8_b' });
    const list = await api(emulator, '/v1/predictions');
    expect(list.json).toEqual({
      next: null,
      previous: null,
      results: [expect.objectContaining({ id: mine.id })],
    });
    expect((await api(emulator, '/v1/predictions?source=web')).json.results).toEqual([]);
    const bad = await api(emulator, '/v1/predictions?cursor=%%%');
    expect([bad.status, bad.json]).toEqual([404, { detail: 'Invalid cursor' }]);
  });
});
