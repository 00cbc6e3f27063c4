// The client against the real emulator over HTTP: the happy path from submit to a streamed
// PNG, and every request-level error class the service can answer with.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  InsufficientCreditsError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ResultDownloadError,
  ServerError,
  toFailureDetails,
} from '../api/index.js';
import { createImageApiClient, type ImageApiClient } from '../providers/apimart/index.js';
import { isKnownTaskStatus, isTerminalStatus, type Task } from '../providers/apimart/wire.js';
import { startEmulator } from '../emulator/index.js';
import { expectNoSecrets, rejection } from './support/assertions.js';

type Emulator = Awaited<ReturnType<typeof startEmulator>>;
type Overrides = NonNullable<Parameters<typeof startEmulator>[0]>['config'];

const DEMO_KEY = 'sk-live-demo';
const OTHER_KEY = 'sk-live-other-account';
const POOR_KEY = 'sk-live-poor-account';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const accounts = [
  { id: 'acct_demo', credits: 1_000_000, webhook_secret: 'whsec_demo', keys: [{ key: DEMO_KEY }] },
  { id: 'acct_other', credits: 1_000, keys: [{ key: OTHER_KEY }] },
  { id: 'acct_poor', credits: 0, keys: [{ key: POOR_KEY }] },
];

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Starts an emulator and a client for `apiKey`; both are closed after the file's tests. */
async function setup(config: Overrides = {}, apiKey = DEMO_KEY): Promise<[Emulator, ImageApiClient]> {
  const emulator = await startEmulator({ config: { port: 0, time_scale: 0.001, accounts, ...config } });
  cleanups.push(() => emulator.close());
  const client = createImageApiClient({ baseUrl: emulator.url, apiKey });
  cleanups.push(() => client.close());
  return [emulator, client];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until the task is terminal; returns every status seen and the final task. */
async function pollUntilTerminal(
  client: ImageApiClient,
  id: string,
): Promise<{ seen: string[]; task: Task }> {
  const seen: string[] = [];
  for (let attempt = 0; attempt < 2_000; attempt++) {
    const task = await client.getTask(id);
    if (seen.at(-1) !== task.status) seen.push(task.status);
    if (isTerminalStatus(task.status)) return { seen, task };
    await sleep(5);
  }
  throw new Error(`task ${id} did not finish; statuses seen: ${seen.join(', ')}`);
}

describe('against the emulator', () => {
  let emulator: Emulator;
  let client: ImageApiClient;
  beforeAll(async () => {
    [emulator, client] = await setup();
  });

  it('submits, polls to completion and streams a PNG result', async () => {
    const { taskIds, raw } = await client.submit({ prompt: 'a lighthouse at dawn', size: '16:9', n: 2 });
    expect(taskIds.length).toBeGreaterThan(0);
    expect(raw.code).toBe(200);
    expect(raw.data.every((item) => item.status === 'submitted')).toBe(true);

    const id = taskIds[0] ?? '';
    const { seen, task } = await pollUntilTerminal(client, id);
    const order = ['pending', 'processing', 'completed'];
    expect(seen.every(isKnownTaskStatus)).toBe(true);
    expect(seen.map((s) => order.indexOf(s))).toEqual(
      [...seen.map((s) => order.indexOf(s))].sort((a, b) => a - b),
    );
    expect(task).toMatchObject({ id, status: 'completed' });
    expect(task.error).toBeUndefined();
    const urls = task.result?.url ?? [];
    expect(urls.length).toBeGreaterThan(0);
    expect(task.result?.expires_at).toBeGreaterThan(0);

    const download = await client.download(urls[0] ?? '');
    const bytes = Buffer.concat(await download.body.toArray());
    expect(download.contentType).toBe('image/png');
    expect(bytes.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    expect(bytes.length).toBe(download.contentLength);
  });

  it('returns a content-policy failure as a failed task, not as an exception', async () => {
    const { taskIds } = await client.submit({ prompt: 'something forbidden' });
    const { task } = await pollUntilTerminal(client, taskIds[0] ?? '');
    expect(task.status).toBe('failed');
    expect(task.error?.code).toBeTruthy();
    expect(task.result).toBeUndefined();
  });

  it('looks up mixed ids in one batch', async () => {
    const { taskIds } = await client.submit({ prompt: 'a teapot' });
    const done = taskIds[0] ?? '';
    await pollUntilTerminal(client, done);
    const unknown = 'task_00000000000000000000000000';
    const ids = [done, 'not a task id', unknown];
    const items = await client.batchLookup(ids);
    expect(items.map((item) => item.id)).toEqual(ids);
    expect(items.map((item) => item.status)).toEqual(['completed', 'invalid_id', 'not_found']);
    expect(items[0]).not.toHaveProperty('result');
  });

  it('answers a bad size with a non-retryable BadRequestError', async () => {
    const error = await rejection(client.submit({ prompt: 'x', size: '7:3' }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ retryable: false, httpStatus: 400, apiCode: 'invalid_size' });
    expect((error as Error).message).toMatch(
      /^POST \/v1\/images\/generations failed with 400 invalid_size: /,
    );
  });

  it('answers an unknown task with NotFoundError carrying the API code', async () => {
    const error = await rejection(client.getTask('task_00000000000000000000000000'));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ retryable: false, httpStatus: 404, apiCode: 'task_not_found' });
  });

  it("answers another account's task with PermissionDeniedError", async () => {
    const other = createImageApiClient({ baseUrl: emulator.url, apiKey: OTHER_KEY });
    cleanups.push(() => other.close());
    const { taskIds } = await other.submit({ prompt: 'their cat' });
    const error = await rejection(client.getTask(taskIds[0] ?? ''));
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error).toMatchObject({ retryable: false, httpStatus: 403 });
  });

  it('answers an account without credits with InsufficientCreditsError', async () => {
    const poor = createImageApiClient({ baseUrl: emulator.url, apiKey: POOR_KEY });
    cleanups.push(() => poor.close());
    const error = await rejection(poor.submit({ prompt: 'x' }));
    expect(error).toBeInstanceOf(InsufficientCreditsError);
    expect(error).toMatchObject({ retryable: false, httpStatus: 402 });
  });

  it('answers a wrong key with AuthenticationError and never reveals the key', async () => {
    const wrongKey = 'sk-live-wrong-key-0123456789';
    const wrong = createImageApiClient({ baseUrl: emulator.url, apiKey: wrongKey });
    cleanups.push(() => wrong.close());
    const error = await rejection(wrong.getTask('task_00000000000000000000000000'));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ retryable: false, httpStatus: 401, apiCode: 'invalid_api_key' });
    expectNoSecrets([error, toFailureDetails(error), wrong, wrong.stats()], [wrongKey]);
  });
});

describe('against a strained emulator', () => {
  it('turns 429 into a retryable RateLimitError with Retry-After', async () => {
    const [, client] = await setup({ rate_limits: { submit: { per_second: 1, burst: 1 } } });
    await client.submit({ prompt: 'first' });
    const error = await rejection(client.submit({ prompt: 'second' }));
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ retryable: true, httpStatus: 429, apiCode: 'rate_limit_exceeded' });
    expect((error as RateLimitError).retryAfterMs).toBeGreaterThan(0);
  });

  it('turns injected 5xx into a retryable ServerError', async () => {
    const [, client] = await setup({ faults: { server_error_rate: 1 } });
    const error = await rejection(client.submit({ prompt: 'x' }));
    expect(error).toBeInstanceOf(ServerError);
    expect((error as ServerError).retryable).toBe(true);
    expect((error as ServerError).httpStatus).toBeGreaterThanOrEqual(500);
  });

  it('fails a truncated download stream with a retryable error', async () => {
    const [, client] = await setup({ faults: { truncate_download_rate: 1 } });
    const { taskIds } = await client.submit({ prompt: 'a truncated moon' });
    const { task } = await pollUntilTerminal(client, taskIds[0] ?? '');
    const download = await client.download(task.result?.url[0] ?? '');
    const error = await rejection(download.body.toArray());
    expect(error).toBeInstanceOf(ResultDownloadError);
    expect(error).toMatchObject({ retryable: true, code: 'api_result_truncated' });
  });
});
