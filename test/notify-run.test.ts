// Notifications end to end (issue 42): a real Temporal dev server, pixelmill's workers in this
// process, the emulator over HTTP on a compressed clock, and a receiver on 127.0.0.1 standing in
// for Slack. A run that completes, one whose items fail, one the API pauses (a refused key) each
// post to the entries that want them; a receiver that answers 500 gets the message on the retry;
// a variable that is not set leaves the message undelivered in summary.json and the run completed.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivityRuntime } from '../activities/index.js';
import { apiAccountId } from '../common/api-account.js';
import { cancelSignal, runProgressQuery, runWorkflowId, taskQueuesOf } from '../common/names.js';
import type { RunInput, RunResult } from '../common/types.js';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import { loadManifest } from '../manifest/load.js';
import { createPixelmillWorkers } from '../worker/workers.js';
import { FAST_EMULATOR, startCatalogHarness } from './support/catalog-harness.js';
import { startLoopbackServer } from './support/loopback-server.js';
import { frozenPlan } from './support/plan.js';
import { waitUntil } from './support/wait.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';

interface Received {
  path: string;
  body: { text: string; blocks: { type: string; text?: { text: string } }[] };
}

const received: Received[] = [];
/** Paths that answer 500 to their first POST. */
const flaky = new Set(['/flaky']);
let env: TestWorkflowEnvironment;
let client: Client;
let dir: string;
let emulator: RunningEmulator;
const cleanups: (() => Promise<unknown>)[] = [];

/** Workers for the account of `apiKey`, their notify variables pointing at the receiver. */
async function startWorkers(apiKey: string, origin: string) {
  const account = apiAccountId(emulator.url, apiKey);
  const runtime = createActivityRuntime({
    apiBaseUrl: emulator.url,
    apiKey,
    env: {
      NOTIFY_OPS: `${origin}/ops`,
      NOTIFY_FLAKY: `${origin}/flaky`,
      PIXELMILL_TEMPORAL_UI_URL: 'http://ui.test:8233',
    },
  });
  const workers = await createPixelmillWorkers({
    connection: env.nativeConnection,
    namespace: 'default',
    queues: taskQueuesOf(account),
    activities: runtime.activities,
    shutdownGraceTime: '1 second',
  });
  const running = workers.run();
  cleanups.push(async () => {
    workers.shutdown();
    await running;
    await runtime.close();
  });
  return account;
}

/** A manifest with `notify:` written into the harness's folder; its run started as `pixelmill run` does. */
async function startRun(name: string, prompts: string[], notify: string[], account: string) {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `api: { base_url: "${emulator.url}" }`,
      'limits: { requests_per_second: 200 }',
      `output: ./${name}-out`,
      'notify:',
      ...notify.map((entry) => `  - ${entry}`),
      'items:',
      ...prompts.map((prompt, i) => `  - { id: i${i}, prompt: "${prompt}" }`),
    ].join('\n'),
  );
  const loaded = loadManifest(file);
  const input: RunInput = {
    plan: await frozenPlan(file),
    manifestHash: loaded.hash,
    apiAccount: account,
    apiBaseUrl: emulator.url,
    emulated: false,
    notify: loaded.settings.notify!,
  };
  return client.workflow.start<(input: RunInput) => Promise<RunResult>>('runWorkflow', {
    workflowId: runWorkflowId(name),
    taskQueue: taskQueuesOf(account).workflow,
    args: [input],
  });
}

const summaryOf = (name: string) =>
  JSON.parse(readFileSync(join(dir, `${name}-out`, 'summary.json'), 'utf8')) as Record<string, unknown>;
const messagesFor = (runId: string, path: string) =>
  received.filter((message) => message.path === path && message.body.text.includes(`${runId} `));

let account: string;
let refusedAccount: string;

beforeAll(async () => {
  const harness = await startCatalogHarness(FAST_EMULATOR);
  ({ env, dir, emulator } = harness);
  client = env.client;
  const receiver = await startLoopbackServer((req, res, body) => {
    const path = req.url ?? '';
    const first = flaky.delete(path);
    received.push({ path, body: JSON.parse(body.toString()) as Received['body'] });
    res.writeHead(first ? 500 : 200).end(first ? 'try again' : 'ok');
  });
  cleanups.push(() => receiver.close());
  account = await startWorkers(DEMO_API_KEY, receiver.origin);
  refusedAccount = await startWorkers('sk-not-a-key', receiver.origin);
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('a run with notify:', () => {
  it('that completes tells the entries that want completions, and records it in summary.json', async () => {
    const handle = await startRun(
      'notify-done',
      ['a lamp', 'a chair'],
      ['{ url_env: NOTIFY_OPS, on: [completed] }', '{ url_env: NOTIFY_FLAKY }'],
      account,
    );
    const result = await handle.result();
    expect(result.counts.completed).toBe(2);
    const [message, ...more] = messagesFor('pixelmill/notify-done', '/ops');
    expect(more).toEqual([]);
    expect(message!.body.text).toBe(
      'pixelmill: pixelmill/notify-done completed: 2 completed of 2; 2 credits',
    );
    const blocks = JSON.stringify(message!.body.blocks);
    expect(blocks).toContain(
      '<http://ui.test:8233/namespaces/default/workflows/pixelmill%2Fnotify-done|Temporal UI>',
    );
    expect(blocks).toContain(`report: \`${join(dir, 'notify-done-out', 'report.jsonl')}\``);
    // The second entry wants only what needs a person.
    expect(messagesFor('pixelmill/notify-done', '/flaky')).toEqual([]);
    expect(summaryOf('notify-done').notifications).toEqual([
      { on: ['completed'], url_env: 'NOTIFY_OPS', delivered: true },
    ]);
  });

  it('whose items fail tells the failure, and a receiver that answered 500 gets it on the retry', async () => {
    const handle = await startRun(
      'notify-failed',
      ['a lamp', 'a forbidden lamp'],
      ['{ url_env: NOTIFY_FLAKY, on: [failed] }'],
      account,
    );
    const result = await handle.result();
    expect(result.counts).toMatchObject({ completed: 1, failed: 1 });
    const messages = messagesFor('pixelmill/notify-failed', '/flaky');
    // The same message twice: refused with a 500, then delivered by Temporal's retry.
    expect(messages).toHaveLength(2);
    expect(messages[1]!.body).toEqual(messages[0]!.body);
    expect(messages[0]!.body.text).toMatch(
      /^pixelmill: pixelmill\/notify-failed failed: 1 completed, 1 failed of 2/,
    );
    expect(summaryOf('notify-failed').notifications).toEqual([
      { on: ['failed'], url_env: 'NOTIFY_FLAKY', delivered: true },
    ]);
  }, 90_000);

  it('that the API pauses (a refused key) tells it when it pauses, once', async () => {
    const handle = await startRun(
      'notify-paused',
      ['a lamp', 'a chair', 'a table'],
      ['{ url_env: NOTIFY_OPS, on: [paused] }'],
      refusedAccount,
    );
    const [message] = await waitUntil('the pause notification', () =>
      messagesFor('pixelmill/notify-paused', '/ops').length > 0
        ? messagesFor('pixelmill/notify-paused', '/ops')
        : undefined,
    );
    expect(message!.body.text).toMatch(
      /^pixelmill: pixelmill\/notify-paused paused: it needs a person\. the API refused the key \(401\)/,
    );
    expect((await handle.query(runProgressQuery)).state).toBe('paused');
    await handle.signal(cancelSignal);
    const result = await handle.result();
    expect(result.counts.cancelled).toBe(3);
    expect(messagesFor('pixelmill/notify-paused', '/ops')).toHaveLength(1);
    // Cancelled by a person: nothing more to tell.
    expect(summaryOf('notify-paused').notifications).toBeUndefined();
  });

  it('whose variable is not set on the worker is recorded undelivered, and the run completes', async () => {
    const handle = await startRun(
      'notify-unset',
      ['a lamp'],
      ['{ url_env: NOTIFY_NOWHERE, on: [completed] }'],
      account,
    );
    const result = await handle.result();
    expect(result.counts.completed).toBe(1);
    expect(summaryOf('notify-unset').notifications).toEqual([
      {
        on: ['completed'],
        url_env: 'NOTIFY_NOWHERE',
        delivered: false,
        error: 'notify: NOTIFY_NOWHERE is not set on the worker',
      },
    ]);
  });
});
