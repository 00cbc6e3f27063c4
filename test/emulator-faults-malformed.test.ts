// faults.malformed_response_rate over HTTP: the emulator garbles successful task queries (GET and
// batch) in three ways and never a submit, and pixelmill's client and API activities handle each:
// truncated JSON is a retryable InvalidResponseError (Temporal retries the call), extra fields are
// accepted, the unknown status "in_progress" comes through as a status that is not finished.
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { InvalidResponseError } from '../api/index.js';
import { createImageApiClient } from '../providers/apimart/index.js';
import { isTerminalStatus } from '../providers/apimart/wire.js';
import { UNKNOWN_STATUS, type MalformedKind } from '../emulator/apimart/malformed.js';
import { writeManifest } from './activities-fixture.js';
import { call, ManualClock, startTestEmulator, submitTask } from './support/emulator.js';
import { frozenPlan } from './support/plan.js';

const KEY = 'sk-live-malformed';
const accounts = [{ id: 'acct_m', keys: [{ key: KEY }] }];
const QUERIES = 60;

/** An emulator that garbles every query, with one task finished (ManualClock: nothing moves). */
async function garblingEmulator(rate = 1) {
  const clock = new ManualClock();
  const emulator = await startTestEmulator(
    {
      accounts,
      seed: 7,
      // The manual clock never refills a bucket: the burst alone must cover every request.
      rate_limits: { submit: { per_second: 1, burst: 1_000 }, query: { per_second: 1, burst: 10_000 } },
      faults: { malformed_response_rate: rate },
    },
    { clock },
  );
  const taskId = await submitTask(emulator, KEY, { prompt: 'a malformed teapot', n: 2 });
  clock.advance(10 * 60_000);
  return { emulator, taskId };
}

/** Which of the three malformed bodies `text` is (throws if it is a well-formed answer). */
function kindOf(text: string, data: (json: Record<string, unknown>) => unknown): MalformedKind {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return 'truncated_json';
  }
  const entries = [data(json)].flat() as Record<string, unknown>[];
  if ('request_id' in json && entries.every((entry) => 'x_trace' in entry)) return 'extra_fields';
  const states = ['pending', 'processing', 'completed', 'failed'];
  if (
    entries.some((entry) => entry.status === UNKNOWN_STATUS) &&
    !entries.some((entry) => states.includes(String(entry.status)))
  )
    return 'unknown_status';
  throw new Error(`a well-formed answer although every query is garbled: ${text}`);
}

describe('faults.malformed_response_rate', () => {
  it('garbles GET and batch answers in all three ways, as HTTP 200 with a matching length', async () => {
    const { emulator, taskId } = await garblingEmulator();
    const seen = new Map<string, number>();
    for (let i = 0; i < QUERIES; i++) {
      const get = await call(emulator.url, `/v1/tasks/${taskId}`, { key: KEY });
      const batch = await call(emulator.url, '/v1/tasks/batch', {
        key: KEY,
        body: { task_ids: [taskId, 'not-a-task-id'] },
      });
      for (const [route, response] of [
        ['get', get],
        ['batch', batch],
      ] as const) {
        expect(response.status).toBe(200);
        expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.text));
        const kind = kindOf(response.text, (json) => json.data);
        seen.set(`${route} ${kind}`, (seen.get(`${route} ${kind}`) ?? 0) + 1);
        if (kind === 'truncated_json') expect(response.text.startsWith('{"code":200,"data":')).toBe(true);
        if (kind === 'unknown_status' && route === 'get') {
          // Unfinished, so it carries nothing only a finished task has.
          expect(Object.keys(response.json.data)).not.toEqual(expect.arrayContaining(['result']));
          expect(response.json.data.completed).toBeUndefined();
        }
        if (kind === 'unknown_status' && route === 'batch') {
          // Only task states are replaced; a lookup outcome stays what it was.
          expect(response.json.data[1]).toEqual({ id: 'not-a-task-id', status: 'invalid_id' });
        }
        if (kind === 'extra_fields' && route === 'get') {
          expect(response.json.data).toMatchObject({ id: taskId, status: 'completed' });
          expect(response.json.data.result.url).toHaveLength(2);
        }
      }
    }
    console.log('malformed answers seen:', Object.fromEntries(seen));
    for (const route of ['get', 'batch'])
      for (const kind of ['truncated_json', 'extra_fields', 'unknown_status'])
        expect(seen.get(`${route} ${kind}`), `${route} ${kind}`).toBeGreaterThan(0);

    // Counted as injected; the request counters still say 200.
    const injected = emulator.injectedFaults();
    expect(injected.truncated_json + injected.extra_fields + injected.unknown_status).toBe(2 * QUERIES);
    expect(emulator.stats().requests['GET /v1/tasks/{id}']).toEqual({ '200': QUERIES });
  });

  it('never garbles a submit: its outcome must stay knowable', async () => {
    const { emulator } = await garblingEmulator();
    for (let i = 0; i < 20; i++) {
      const response = await call(emulator.url, '/v1/images/generations', {
        key: KEY,
        body: { prompt: `teapot ${i}` },
      });
      expect(response.status).toBe(200);
      expect(response.json.data[0].task_id).toMatch(/^task_/);
    }
    expect(emulator.stats().tasks_total).toBe(21);
  });

  it('garbles about the configured share of answers, reproducibly for a seed', async () => {
    const shares: number[] = [];
    for (let run = 0; run < 2; run++) {
      const { emulator, taskId } = await garblingEmulator(0.25);
      let garbled = 0;
      for (let i = 0; i < 200; i++) {
        const get = await call(emulator.url, `/v1/tasks/${taskId}`, { key: KEY });
        if (get.json?.data?.status !== 'completed' || 'request_id' in get.json) garbled++;
      }
      expect(garbled).toBe(Object.values(emulator.injectedFaults()).reduce((a, b) => a + b, 0));
      shares.push(garbled / 200);
    }
    expect(shares[0]).toBe(shares[1]);
    expect(shares[0]).toBeGreaterThan(0.1);
    expect(shares[0]).toBeLessThan(0.4);
  });

  it('the client: truncated JSON is a retryable InvalidResponseError, the rest pass through', async () => {
    const { emulator, taskId } = await garblingEmulator();
    const client = createImageApiClient({ baseUrl: emulator.url, apiKey: KEY });
    try {
      const outcomes = new Set<string>();
      for (let i = 0; i < QUERIES; i++) {
        const get = await client.getTask(taskId).then(
          (task) => {
            if (task.status === UNKNOWN_STATUS) expect(task.result).toBeUndefined();
            else expect('x_trace' in task, 'a kept extra field').toBe(true);
            return `get ${task.status}`;
          },
          (error: unknown) => {
            expect(error).toBeInstanceOf(InvalidResponseError);
            expect(error).toMatchObject({ retryable: true, code: 'api_invalid_response' });
            expect((error as Error).message).toMatch(
              /^GET \/v1\/tasks\/task_\w+ returned an invalid response: not JSON/,
            );
            return 'get invalid';
          },
        );
        const batch = await client.batchLookup([taskId]).then(
          (items) => `batch ${items[0]?.status}`,
          (error: unknown) => {
            // A garbled answer to a POST may hide an action: flagged, and still retryable (a lookup is safe).
            expect(error).toMatchObject({
              name: 'InvalidResponseError',
              retryable: true,
              outcomeUnknown: true,
            });
            return 'batch invalid';
          },
        );
        outcomes.add(get).add(batch);
      }
      expect([...outcomes].sort()).toEqual([
        'batch completed',
        'batch in_progress',
        'batch invalid',
        'get completed',
        'get in_progress',
        'get invalid',
      ]);
      expect(isTerminalStatus(UNKNOWN_STATUS)).toBe(false);
    } finally {
      await client.close();
    }
  });

  it('the API activities: truncation fails retryably for Temporal, an unknown status is not finished', async () => {
    const { emulator, taskId } = await garblingEmulator();
    const fixture = writeManifest([
      'name: teapots',
      'limits: { requests_per_second: 5000 }',
      'items:',
      '  - { id: t, prompt: a malformed teapot, n: 2 }',
    ]);
    const activities = createActivities({ apiBaseUrl: emulator.url, apiKey: KEY });
    const { plan } = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });
    const outcomes = new Set<string>();
    for (let i = 0; i < QUERIES; i++) {
      const fetched = await activities.fetchTask({ plan, taskId }).then(
        (task) => {
          if (task.status === 'completed') expect(task.urls).toHaveLength(2);
          else expect(task).toEqual({ status: UNKNOWN_STATUS, creditsCost: 2, calls: expect.any(Number) }); // no urls: not finished
          return `fetch ${task.status}`;
        },
        (error: unknown) => {
          expect(error).toBeInstanceOf(ApplicationFailure);
          expect(error).toMatchObject({ type: 'InvalidResponseError', nonRetryable: false });
          return 'fetch retryable failure';
        },
      );
      const looked = await activities.lookupTasks({ plan, taskIds: [taskId] }).then(
        ({ statuses }) => `lookup ${statuses[0]}`,
        (error: unknown) => {
          expect(error).toMatchObject({ type: 'InvalidResponseError', nonRetryable: false });
          return 'lookup retryable failure';
        },
      );
      outcomes.add(fetched).add(looked);
    }
    expect([...outcomes].sort()).toEqual([
      'fetch completed',
      'fetch in_progress',
      'fetch retryable failure',
      'lookup completed',
      'lookup in_progress',
      'lookup retryable failure',
    ]);
  });
});
