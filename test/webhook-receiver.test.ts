// The webhook receiver over real HTTP against a real Temporal dev server: what it answers to
// authentic, forged, oversize, repeated and misaddressed deliveries, and what reaches the shard's
// history (one `taskFinished` signal per task, nothing of the secret). The shard workflows here
// are started without a worker: Temporal records their signals all the same.
import { Readable } from 'node:stream';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardWorkflowId, runWorkflowId } from '../common/names.js';
import type { TaskFinishedSignal } from '../common/types.js';
import { signWebhookBody } from '../emulator/apimart/webhooks.js';
import { startWebhookServer, type RunningWebhookServer } from '../webhook/server.js';
import { receiverVerifiers } from '../webhook/verifiers.js';
import { temporalSignaller, type ShardSignaller } from '../webhook/signal.js';
import { startDevServerEnv } from './support/temporal.js';

const SECRET = 'whsec_receiver_test_0123456789';
const MAX_BODY = 4096;
const NO_WORKER_QUEUE = 'webhook-receiver-test-no-worker';

let env: TestWorkflowEnvironment;
let receiver: RunningWebhookServer;
const logged: string[] = [];
/** Set by a test to make the next signals fail as if Temporal were unreachable. */
let failSignals = 0;

beforeAll(async () => {
  env = await startDevServerEnv();
  const signal = temporalSignaller(env.client);
  const flaky: ShardSignaller = async (workflowId, task) => {
    if (failSignals > 0) {
      failSignals--;
      throw new Error('temporal unavailable (test)');
    }
    return signal(workflowId, task);
  };
  receiver = await startWebhookServer({
    signal: flaky,
    verifierFor: receiverVerifiers({ secret: SECRET }, ['apimart']),
    maxBodyBytes: MAX_BODY,
    log: (line) => logged.push(line),
  });
});
afterAll(async () => {
  await receiver?.close();
  await env?.teardown();
});

let shards = 0;
/** A fresh shard workflow (no worker) and the callback path the service would post to for it. */
async function openShard() {
  const workflowId = shardWorkflowId(runWorkflowId('receiver-test'), shards++);
  const handle = await env.client.workflow.start('shardWorkflow', {
    workflowId,
    taskQueue: NO_WORKER_QUEUE,
    args: [],
  });
  return { handle, path: `/hooks/apimart/${encodeURIComponent(workflowId)}/callback` };
}

type ShardHandle = Awaited<ReturnType<typeof openShard>>['handle'];

async function signalsOf(handle: ShardHandle): Promise<TaskFinishedSignal[]> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).flatMap((event) => {
    const signaled = event.workflowExecutionSignaledEventAttributes;
    if (!signaled) return [];
    expect(signaled.signalName).toBe('taskFinished');
    const data = signaled.input?.payloads?.[0]?.data;
    return [JSON.parse(Buffer.from(data!).toString('utf8')) as TaskFinishedSignal];
  });
}

function taskBody(id: string, status = 'completed'): string {
  return JSON.stringify({
    id,
    status,
    progress: '100%',
    created: 1_767_225_600,
    completed: 1_767_225_650,
    credits_cost: 2,
    ...(status === 'completed'
      ? { result: { url: [`http://results.test/${id}/0.png`, `http://results.test/${id}/1.png`] } }
      : {}),
    ...(status === 'failed'
      ? { error: { message: 'refused', type: 'content_policy', code: 'content_blocked' } }
      : {}),
  });
}

async function deliver(path: string, body: string | Buffer | Readable, headers: Record<string, string> = {}) {
  const response = await request(`${receiver.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await response.body.text();
  return { status: response.statusCode, text };
}

const signed = (body: string, secret = SECRET) => ({ 'x-webhook-signature': signWebhookBody(body, secret) });

describe('webhook receiver', () => {
  it('signals the owning shard with the task, and never lets the secret into history or logs', async () => {
    const { handle, path } = await openShard();
    const completed = taskBody('task-ok');
    const failed = taskBody('task-failed', 'failed');
    expect((await deliver(path, completed, signed(completed))).status).toBe(200);
    expect((await deliver(path, failed, signed(failed))).status).toBe(200);

    expect(await signalsOf(handle)).toEqual([
      {
        taskId: 'task-ok',
        status: 'completed',
        urls: ['http://results.test/task-ok/0.png', 'http://results.test/task-ok/1.png'],
        creditsCost: 2,
      },
      {
        taskId: 'task-failed',
        status: 'failed',
        creditsCost: 2,
        error: { type: 'content_policy', code: 'content_blocked', message: 'refused' },
      },
    ]);
    const history = JSON.stringify(await handle.fetchHistory());
    expect(history).not.toContain(SECRET);
    expect(history).not.toContain(signWebhookBody(completed, SECRET));
    expect(logged.join('\n')).not.toContain(SECRET);
  });

  it('answers 401 to a missing, wrong, malformed or forged signature and signals nothing', async () => {
    const { handle, path } = await openShard();
    const body = taskBody('task-forged');
    const forgedBody = body.replace('task-forged/0.png', 'evil.example/0.png');
    const cases: [string, string | undefined][] = [
      ['missing', undefined],
      ['signed with another secret', signWebhookBody(body, 'whsec_someone_else')],
      ['not hex', 'z'.repeat(64)],
      ['truncated', signWebhookBody(body, SECRET).slice(0, 63)],
      ['the genuine signature over a forged body', signWebhookBody(body, SECRET)],
    ];
    for (const [what, signature] of cases) {
      const sent = what.includes('forged') ? forgedBody : body;
      const headers: Record<string, string> =
        signature === undefined ? {} : { 'x-webhook-signature': signature };
      expect((await deliver(path, sent, headers)).status, what).toBe(401);
    }
    expect(await signalsOf(handle)).toEqual([]);
    // The genuine delivery still goes through afterwards: rejections mark nothing as seen.
    expect((await deliver(path, body, signed(body))).status).toBe(200);
    expect((await signalsOf(handle)).map((s) => s.taskId)).toEqual(['task-forged']);
  });

  it('answers 413 to a body over the limit, declared or streamed, and signals nothing', async () => {
    const { handle, path } = await openShard();
    const padded = JSON.stringify({ ...JSON.parse(taskBody('task-big')), pad: 'x'.repeat(MAX_BODY) });
    expect((await deliver(path, padded, signed(padded))).status).toBe(413);
    // Chunked, without a content-length: cut off while reading.
    const chunks = [padded.slice(0, 3000), padded.slice(3000)];
    expect((await deliver(path, Readable.from(chunks), signed(padded))).status).toBe(413);
    expect(await signalsOf(handle)).toEqual([]);
    expect(receiver.counts.too_large).toBeGreaterThanOrEqual(2);
  });

  it('signals a task once however often it is delivered: concurrent duplicates and a later replay', async () => {
    const { handle, path } = await openShard();
    const body = taskBody('task-dup');
    const answers = await Promise.all(Array.from({ length: 4 }, () => deliver(path, body, signed(body))));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    // A replay of the recorded delivery, byte for byte, later.
    expect((await deliver(path, body, signed(body))).status).toBe(200);
    expect((await signalsOf(handle)).map((s) => s.taskId)).toEqual(['task-dup']);
  });

  it('answers 503 when Temporal does not take the signal, and signals on the retry', async () => {
    const { handle, path } = await openShard();
    const body = taskBody('task-retry');
    failSignals = 1;
    expect((await deliver(path, body, signed(body))).status).toBe(503);
    expect(await signalsOf(handle)).toEqual([]);
    expect((await deliver(path, body, signed(body))).status).toBe(200);
    expect((await signalsOf(handle)).map((s) => s.taskId)).toEqual(['task-retry']);
  });

  it('acknowledges (200) webhooks of a shard that has closed or never existed, logging it once', async () => {
    const { handle, path } = await openShard();
    await handle.terminate('test: the shard is done');
    for (const id of ['task-late-1', 'task-late-2']) {
      const body = taskBody(id);
      expect((await deliver(path, body, signed(body))).status).toBe(200);
    }
    const shardId = decodeURIComponent(path.split('/')[3]!);
    expect(logged.filter((line) => line.includes(shardId))).toHaveLength(1);

    const ghost = `/hooks/apimart/${encodeURIComponent(shardWorkflowId(runWorkflowId('no-such-run'), 0))}/callback`;
    const body = taskBody('task-ghost');
    expect((await deliver(ghost, body, signed(body))).status).toBe(200);
  });

  it('refuses what is not a signed terminal Task for a shard: 404, 405, 400; ignores non-terminal states', async () => {
    const { handle, path } = await openShard();
    const body = taskBody('task-misaddressed');
    const runPath = `/hooks/apimart/${encodeURIComponent(runWorkflowId('receiver-test'))}/callback`;
    expect((await deliver(runPath, body, signed(body))).status).toBe(404);
    expect((await deliver('/callback', body, signed(body))).status).toBe(404);
    // A provider this receiver has no keys for, or none at all.
    expect((await deliver(path.replace('/apimart/', '/fal/'), body, signed(body))).status).toBe(404);
    expect((await deliver(path.replace('/apimart/', '/nobody/'), body, signed(body))).status).toBe(404);
    const get = await request(`${receiver.url}${path}`);
    await get.body.dump();
    expect(get.statusCode).toBe(405);

    expect((await deliver(path, 'not json', signed('not json'))).status).toBe(400);
    const noId = JSON.stringify({ status: 'completed' });
    expect((await deliver(path, noId, signed(noId))).status).toBe(400);
    const processing = taskBody('task-processing', 'processing');
    expect((await deliver(path, processing, signed(processing))).status).toBe(200);
    expect(await signalsOf(handle)).toEqual([]);
  });
});
