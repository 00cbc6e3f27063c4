// The API activities against the real emulator over HTTP: submit, batch lookup and task GET map
// answers to what the workflow needs, and every failure becomes an ApplicationFailure whose
// retryability and delay come from the client's classification, without the key in it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FETCH_ATTEMPTS_WHILE_UNFINISHED } from '../activities/api-calls.js';
import { createActivities, type ActivityDeps } from '../activities/index.js';
import { submitJournalFile } from '../runstate/submit-journal.js';
import { groundTruth } from '../bench/catalog-audit.js';
import { ManualClock, startTestEmulator } from './support/emulator.js';
import { applicationFailure, inActivity, writeManifest } from './activities-fixture.js';
import { frozenPlan } from './support/plan.js';

const KEY = 'sk-live-activities-key';
const POOR_KEY = 'sk-live-activities-poor';
const accounts = [
  { id: 'acct_rich', credits: 1_000_000, keys: [{ key: KEY }] },
  { id: 'acct_poor', credits: 0, keys: [{ key: POOR_KEY }] },
];

function chairs(apiLines: string[] = []) {
  return writeManifest([
    'name: chairs',
    ...apiLines,
    'items:',
    '  - { id: oak, prompt: an oak chair, size: "16:9", n: 2 }',
    '  - { id: pine, prompt: a pine chair, language: ja }',
  ]);
}

async function prepared(deps: ActivityDeps, apiLines: string[] = []) {
  const fixture = chairs(apiLines);
  const activities = createActivities(deps);
  const { plan } = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });
  return { activities, plan };
}

/** Every string in a failure that could carry a secret: message, stack, details. */
function failureText(failure: Error & { details?: unknown }): string {
  return `${failure.message}\n${failure.stack ?? ''}\n${JSON.stringify(failure.details ?? null)}`;
}

describe('submitItem, lookupTasks, fetchTask', () => {
  it('submits a planned item and follows its task to the result', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator({ accounts }, { clock });
    const { activities, plan } = await prepared({
      apiBaseUrl: emulator.url,
      env: { PIXELMILL_API_KEY: KEY },
    });

    const { taskId } = await activities.submitItem({ plan, index: 0, attempt: 1 });
    expect(taskId).toMatch(/^task_/);
    const { taskId: second } = await activities.submitItem({ plan, index: 1, attempt: 1 });

    const lookup = await activities.lookupTasks({ plan, taskIds: [second, 'garbage', taskId] });
    expect(lookup.statuses).toEqual(['pending', 'invalid_id', 'pending']);

    clock.advance(10 * 60_000);
    const done = await activities.fetchTask({ plan, taskId });
    expect(done.status).toBe('completed');
    expect(done.urls).toHaveLength(2);
    expect(done.creditsCost).toBe(2);
    expect(await activities.lookupTasks({ plan, taskIds: [taskId] })).toEqual({
      statuses: ['completed'],
      calls: 1,
    });

    // What the emulator received is exactly the planned item.
    const truth = await (await fetch(`${emulator.url}/_emulator/tasks`)).text();
    const tasks = truth
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            id: string;
            prompt: string;
            n: number;
            size: string;
            completed_at_ms: number;
          },
      );
    const task = tasks.find((t) => t.id === taskId);
    expect(task).toMatchObject({ prompt: 'an oak chair', n: 2, size: '16:9' });
    // expires_at (Unix seconds, 24 h after completion) comes back in milliseconds.
    const expiry = task!.completed_at_ms + 86_400_000;
    expect(done.expiresAt! % 1000).toBe(0);
    expect(done.expiresAt!).toBeGreaterThanOrEqual(expiry);
    expect(done.expiresAt!).toBeLessThan(expiry + 1000);
  });

  it('a retried submit takes the task its cut-off attempt created, from the journal', async () => {
    const emulator = await startTestEmulator({ accounts });
    const { activities, plan } = await prepared({ apiBaseUrl: emulator.url, apiKey: KEY });
    const tasksAtApi = async () => (await groundTruth(emulator)).length;
    const startedAt = Date.now();
    const call = (activityId: string, attempt: number, runId = 'run-a') =>
      inActivity(
        activities.submitItem,
        { plan, index: 0, attempt: 1 },
        { workflowExecution: { workflowId: 'run/chairs/shard-0', runId }, activityId, attempt },
      ).result;

    // Attempt 1 got its answer, but (as if its worker died) Temporal never recorded it.
    const { taskId } = await call('7', 1);
    expect(await tasksAtApi()).toBe(1);
    // The API calls counted: the earlier attempts' (each made at most one), none of its own.
    expect(await call('7', 2)).toEqual({ taskId, calls: 1 });
    expect(await call('7', 3)).toEqual({ taskId, calls: 2 });
    expect(await tasksAtApi()).toBe(1);

    // Another call, or the same activity id in another run of the shard, is a submit of its own.
    const other = await call('8', 2);
    const nextRun = await call('7', 2, 'run-b');
    expect(new Set([taskId, other.taskId, nextRun.taskId]).size).toBe(3);
    expect(await tasksAtApi()).toBe(3);

    const journal = readFileSync(submitJournalFile(plan.stateDir, 'run/chairs/shard-0'), 'utf8');
    const lines = journal
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { at: number });
    const endedAt = Date.now();
    for (const line of lines) expect(line.at >= startedAt && line.at <= endedAt, String(line.at)).toBe(true);
    expect(lines.map(({ at: _at, ...line }) => line)).toEqual([
      { run: 'run-a', activity: '7', task: taskId },
      { run: 'run-a', activity: '7', task: taskId, taken_over_at_attempt: 2 },
      { run: 'run-a', activity: '7', task: taskId, taken_over_at_attempt: 3 },
      { run: 'run-a', activity: '8', task: other.taskId },
      { run: 'run-b', activity: '7', task: nextRun.taskId },
    ]);
  });

  it('asks again, through a retryable failure, when a GET says a finished task is not finished', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator({ accounts }, { clock });
    const { activities, plan } = await prepared({ apiBaseUrl: emulator.url, apiKey: KEY });
    const { taskId } = await activities.submitItem({ plan, index: 1, attempt: 1 });
    const fetchAt = (attempt: number) =>
      inActivity(activities.fetchTask, { plan, taskId }, { attempt }).result;

    for (let attempt = 1; attempt < FETCH_ATTEMPTS_WHILE_UNFINISHED; attempt++) {
      const failure = await applicationFailure(fetchAt(attempt));
      expect(failure).toMatchObject({ type: 'TaskNotFinished', nonRetryable: false });
      expect(failure.message).toContain('"pending"');
    }
    // The last attempt hands the answer back: the shard's lookups follow the task from there.
    expect(await fetchAt(FETCH_ATTEMPTS_WHILE_UNFINISHED)).toMatchObject({ status: 'pending' });
    clock.advance(10 * 60_000);
    expect(await fetchAt(1)).toMatchObject({ status: 'completed' });
  });

  it('reports expired and unknown tasks as answers, not failures', async () => {
    const clock = new ManualClock();
    const emulator = await startTestEmulator({ accounts, result_ttl_seconds: 60 }, { clock });
    const { activities, plan } = await prepared({ apiBaseUrl: emulator.url, apiKey: KEY });
    const { taskId } = await activities.submitItem({ plan, index: 1, attempt: 1 });
    clock.advance(60 * 60_000);
    expect(await activities.fetchTask({ plan, taskId })).toEqual({ status: 'expired', calls: 1 });
    expect(await activities.fetchTask({ plan, taskId: 'task_NOSUCHTASK' })).toEqual({
      status: 'not_found',
      calls: 1,
    });
  });

  it("estimates the cost of a result a webhook or a lookup told, from the manifest's pricing, without a call", async () => {
    const fixture = writeManifest([
      'name: chairs',
      'api: { provider: fal, api_key_env: FAL_KEY, base_url: "http://127.0.0.1:9" }',
      'defaults: { model: fal-ai/flux/dev }',
      'pricing: { per_image: 0.25 }',
      'items:',
      '  - { id: oak, prompt: an oak chair, size: "16:9", n: 2 }',
    ]);
    const activities = createActivities({ env: { FAL_KEY: 'fal-key-unused' } });
    const { plan } = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });
    const known = { status: 'completed', urls: ['https://v3.fal.media/a.png', 'https://v3.fal.media/b.png'] };
    // oak asks for 2 images: 0.5, estimated; nothing was sent to the (unreachable) provider.
    expect(await activities.fetchTask({ plan, taskId: 'req-1|fal-ai/flux', index: 0, known })).toEqual({
      ...known,
      creditsCost: 0.5,
      calls: 0,
    });
  });

  it('reads the key from the manifest api_key_env, then PIXELMILL_API_KEY', async () => {
    const emulator = await startTestEmulator({ accounts });
    const named = await prepared({ env: { CHAIRS_KEY: KEY, PIXELMILL_API_KEY: 'sk-wrong' } }, [
      `api: { base_url: "${emulator.url}", api_key_env: CHAIRS_KEY }`,
    ]);
    expect((await named.activities.submitItem({ plan: named.plan, index: 1, attempt: 1 })).taskId).toMatch(
      /^task_/,
    );

    const fallback = await prepared({ env: { PIXELMILL_API_KEY: KEY } }, [
      `api: { base_url: "${emulator.url}", api_key_env: CHAIRS_KEY }`,
    ]);
    expect(
      (await fallback.activities.submitItem({ plan: fallback.plan, index: 1, attempt: 1 })).taskId,
    ).toMatch(/^task_/);
  });

  it('fails without retries when no key or no address is configured, naming what to set', async () => {
    const noKey = await prepared({ env: {} }, [
      'api: { base_url: "http://127.0.0.1:9", api_key_env: CHAIRS_KEY }',
    ]);
    const failure = await applicationFailure(
      noKey.activities.submitItem({ plan: noKey.plan, index: 0, attempt: 1 }),
    );
    expect(failure.type).toBe('ApiNotConfigured');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('CHAIRS_KEY or PIXELMILL_API_KEY');

    const noAddress = await prepared({ env: { PIXELMILL_API_KEY: KEY } });
    const missing = await applicationFailure(
      noAddress.activities.lookupTasks({ plan: noAddress.plan, taskIds: ['x'] }),
    );
    expect(missing.type).toBe('ApiNotConfigured');
    expect(missing.message).toContain('PIXELMILL_API_BASE_URL');
    expect(missing.message).not.toContain(KEY);
  });
});

describe('error mapping', () => {
  it('401 is non-retryable and never shows the key', async () => {
    const emulator = await startTestEmulator({ accounts });
    const badKey = 'sk-live-not-a-configured-key';
    const { activities, plan } = await prepared({ apiBaseUrl: emulator.url, apiKey: badKey });
    const failure = await applicationFailure(activities.submitItem({ plan, index: 0, attempt: 1 }));
    expect(failure.type).toBe('AuthenticationError');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({ code: 'api_authentication_failed', retryable: false });
    expect(failureText(failure)).not.toContain(badKey);
  });

  it('429 is retryable, with the Retry-After as the next retry delay', async () => {
    const emulator = await startTestEmulator({
      accounts,
      rate_limits: { submit: { per_second: 0.2, burst: 1 }, query: { per_second: 0.2, burst: 1 } },
    });
    const { activities, plan } = await prepared({ apiBaseUrl: emulator.url, apiKey: KEY });
    await activities.submitItem({ plan, index: 0, attempt: 1 });
    const failure = await applicationFailure(activities.submitItem({ plan, index: 1, attempt: 1 }));
    expect(failure.type).toBe('RateLimitError');
    expect(failure.nonRetryable).toBe(false);
    // Benign: the SDK logs expected 429 retries at debug level, not as warnings.
    expect(failure.category).toBe('BENIGN');
    // Retry-After is whole seconds, >= 1: a refill at 0.2/s takes up to 5 s.
    expect(failure.nextRetryDelay).toBeGreaterThanOrEqual(1000);
    expect(Number(failure.nextRetryDelay) % 1000).toBe(0);
    expect(failure.details?.[0]).toMatchObject({
      retryAfterMs: failure.nextRetryDelay,
      outcomeUnknown: false,
    });
    expect(failureText(failure)).not.toContain(KEY);
  });

  it('402 is a non-retryable InsufficientCreditsError (the workflow pauses the run)', async () => {
    const emulator = await startTestEmulator({ accounts });
    const { activities, plan } = await prepared({ apiBaseUrl: emulator.url, apiKey: POOR_KEY });
    const failure = await applicationFailure(activities.submitItem({ plan, index: 0, attempt: 1 }));
    expect(failure.type).toBe('InsufficientCreditsError');
    expect(failure.nonRetryable).toBe(true);
    expect(failureText(failure)).not.toContain(POOR_KEY);
  });

  it('a 5xx is retryable and flagged as possibly acted on', async () => {
    const emulator = await startTestEmulator({ accounts, faults: { server_error_rate: 1 } });
    const { activities, plan } = await prepared({ apiBaseUrl: emulator.url, apiKey: KEY });
    const failure = await applicationFailure(activities.submitItem({ plan, index: 0, attempt: 1 }));
    expect(failure.type).toBe('ServerError');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.details?.[0]).toMatchObject({ outcomeUnknown: true });
  });
});
