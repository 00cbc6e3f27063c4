// Operating the BFL emulator: injected 5xx per request class, the lost submit response, the
// admin ground truth, the state_file journal across a restart, and the YAML config with every
// problem at file:line:col.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  DEFAULT_BFL_CONFIG,
  loadBflConfig,
  parseBflConfig,
  parseBflConfigText,
  startBflEmulator,
  type BflConfigOverrides,
} from '../emulator/bfl/index.js';
import {
  bfl,
  DEMO_BFL_KEY,
  download,
  fixed,
  ManualClock,
  poll,
  startTestBfl,
  startWebhookReceiver,
  submit,
} from './support/emulator-bfl.js';

async function setup(config: BflConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestBfl(fixed(config), { clock });
  return { clock, emulator };
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'pixelmill-bfl-'));
}

describe('server faults', () => {
  it('answers 500, 502 or 503 (not JSON) per request class, each at its own rate', async () => {
    const { emulator } = await setup({ faults: { server_error_rate: { get_result: 1, credits: 1 } } });
    const answer = await submit(emulator, 'flux-pro-1.1', { prompt: 'p' });
    const statuses = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const polled = await poll(answer.polling_url);
      statuses.add(polled.status);
      expect(polled.json).toBeUndefined();
    }
    expect([...statuses].every((status) => [500, 502, 503].includes(status))).toBe(true);
    expect(statuses.size).toBeGreaterThan(1);
    expect((await bfl(emulator.url, '/v1/credits', { key: DEMO_BFL_KEY })).status).toBeGreaterThanOrEqual(
      500,
    );
    expect(emulator.stats().faults).toEqual({ server_error_get_result: 20, server_error_credits: 1 });

    const deliveryFaults = await setup({ faults: { server_error_rate: { delivery: 1 } } });
    const other = await submit(deliveryFaults.emulator, 'flux-pro-1.1', { prompt: 'p' });
    deliveryFaults.clock.advance(12_000);
    const sample = (await poll(other.polling_url)).json.result.sample as string;
    expect((await download(sample)).status).toBeGreaterThanOrEqual(500);
  });

  it('faults a submit before anything else: no task, no charge', async () => {
    const { emulator } = await setup({ faults: { server_error_rate: { submit: 1 } } });
    const response = await bfl(emulator.url, '/v1/flux-pro-1.1', {
      key: DEMO_BFL_KEY,
      body: { prompt: 'p' },
    });
    expect(response.status).toBeGreaterThanOrEqual(500);
    expect(emulator.stats()).toMatchObject({ tasks_total: 0, credits: { taken: 0 } });
  });

  it('closes the connection of an accepted submit with lost_submit_response_rate 1: the task exists all the same', async () => {
    const { emulator } = await setup({ faults: { lost_submit_response_rate: 1 } });
    await expect(
      bfl(emulator.url, '/v1/flux-pro-1.1', { key: DEMO_BFL_KEY, body: { prompt: 'did it happen?' } }),
    ).rejects.toThrow();
    const stats = emulator.stats();
    expect(stats).toMatchObject({
      tasks_total: 1,
      faults: { lost_submit_response: 1 },
      credits: { taken: 4 },
    });
    expect(stats.requests['POST /v1/{model}']).toEqual({ '0': 1 });
  });
});

describe('ground truth', () => {
  it('lists every task as NDJSON with its times, cost, charge and sample fetch', async () => {
    const { clock, emulator } = await setup({ generation: { request_moderation_words: ['blocked'] } });
    const t0 = clock.now();
    const ready = await submit(emulator, 'flux-pro-1.1', { prompt: 'twice' });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'twice' });
    await submit(emulator, 'flux-pro-1.1', { prompt: 'blocked one' });
    clock.advance(12_000);
    const sample = (await poll(ready.polling_url)).json.result.sample as string;
    clock.advance(1_000);
    expect((await download(sample)).status).toBe(200);
    const response = await bfl(emulator.url, '/_emulator/tasks');
    expect(response.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    const lines = response.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({
      id: ready.id,
      account: 'acct_demo',
      key: 'acct_demo/0',
      model: 'flux-pro-1.1',
      prompt: 'twice',
      status: 'Ready',
      width: 1024,
      height: 768,
      format: 'jpeg',
      cost: 4,
      charged: true,
      webhook: false,
      stuck: false,
      submitted_at_ms: t0,
      started_at_ms: t0 + 2_000,
      ended_at_ms: t0 + 12_000,
      deleted_at_ms: t0 + 12_000 + 3_600_000,
      sample_expires_at_ms: t0 + 12_000 + 600_000,
      sample_fetched_at_ms: t0 + 13_000,
    });
    expect(lines[2]).toMatchObject({
      status: 'Request Moderated',
      charged: false,
      sample_expires_at_ms: null,
    });
    expect(emulator.stats()).toMatchObject({
      prompts_submitted_twice: 1,
      samples: { fetched: 1, downloads: 1 },
      requests: { 'GET /_emulator/tasks': { '200': 1 } },
    });
  });
});

describe('state_file', () => {
  it('knows every accepted task after a restart: statuses, sample URLs, credits, active slots, limits, fetches', async () => {
    const stateFile = join(tempDir(), 'bfl.jsonl');
    const clock = new ManualClock();
    const config = fixed({ state_file: stateFile, limits: { active_tasks: 3 } });
    const first = await startBflEmulator({ config: { ...config, host: '127.0.0.1', port: 0 }, clock });
    onTestFinished(() => first.close());
    const a = await submit(first, 'flux-pro-1.1', { prompt: 'before the restart' });
    const b = await submit(first, 'flux-pro-1.1', { prompt: 'second' });
    first.setLimits({ active_tasks: 2 });
    clock.advance(12_000);
    const sample = (await poll(a.polling_url)).json.result.sample as string;
    expect((await download(sample)).status).toBe(200);
    const c = await submit(first, 'flux-pro-1.1', { prompt: 'third' });
    await first.close();

    const second = await startBflEmulator({ config: { ...config, host: '127.0.0.1', port: 0 }, clock });
    onTestFinished(() => second.close());
    const pollAt = (answer: { id: string }) => bfl(second.url, `/v1/get_result?id=${answer.id}`);
    expect((await pollAt(a)).json.status).toBe('Ready');
    expect((await pollAt(b)).json.status).toBe('Ready');
    expect((await pollAt(c)).json.status).toBe('Pending');
    // The URL handed out before the restart still works on the new port's same signature.
    const moved = new URL(sample);
    moved.port = new URL(second.url).port;
    expect((await download(moved.toString())).status).toBe(200);
    expect(second.limits().active_tasks).toBe(2);
    await submit(second, 'flux-pro-1.1', { prompt: 'fourth' });
    expect(
      (await bfl(second.url, '/v1/flux-pro-1.1', { key: DEMO_BFL_KEY, body: { prompt: 'x' } })).status,
    ).toBe(429);
    expect(second.stats()).toMatchObject({
      tasks_total: 4,
      credits: { taken: 16 },
      samples: { fetched: 1 },
    });
    expect((await bfl(second.url, '/v1/credits', { key: DEMO_BFL_KEY })).json).toEqual({
      credits: 100_000 - 16,
    });
  });

  it('arms the webhooks still to come after a restart, and not those due while it was down', async () => {
    const stateFile = join(tempDir(), 'bfl.jsonl');
    const clock = new ManualClock();
    const receiver = await startWebhookReceiver([], clock);
    const config = fixed({
      state_file: stateFile,
      host: '127.0.0.1',
      port: 0,
      models: { 'flux-dev': { seconds: [100, 100] } },
    });
    const first = await startBflEmulator({ config, clock });
    await submit(first, 'flux-pro-1.1', { prompt: 'due while down', webhook_url: receiver.base });
    const later = await bfl(first.url, '/v1/flux-dev', {
      key: DEMO_BFL_KEY,
      body: { prompt: 'due after', webhook_url: receiver.base, webhook_secret: 'kept' },
    });
    await first.close();
    clock.advance(50_000);
    const second = await startBflEmulator({ config, clock });
    onTestFinished(() => second.close());
    clock.advance(52_000);
    const [hook] = await receiver.until(1);
    expect(JSON.parse(hook!.body)).toMatchObject({ id: later.json.id, status: 'Ready' });
    expect(hook!.headers['x-bfl-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(receiver.received).toHaveLength(1);
  });
});

describe('config', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_BFL_CONFIG).toMatchObject({
      time_scale: 1,
      limits: { active_tasks: 24, scope: 'account', retry_after_seconds: null },
      sample: { url_ttl_seconds: 600, expired_status: 403, resign_on_poll: false },
      webhooks: { payload: 'get_result', signature: 'hmac_sha256', retry_seconds: [1, 5, 30] },
      models: { 'flux-kontext-max': { max_active: 6, cost: 8 } },
    });
    expect(Object.isFrozen(DEFAULT_BFL_CONFIG.limits)).toBe(true);
    expect(parseBflConfig({ generation: { queue_seconds: 3 } }).generation.queue_seconds).toEqual([3, 3]);
  });

  it('is exactly the YAML block of docs/emulators/bfl.md', () => {
    const doc = readFileSync(new URL('../docs/emulators/bfl.md', import.meta.url), 'utf8');
    const block = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block).toBeDefined();
    expect(parseBflConfigText(block!, 'docs/emulators/bfl.md')).toEqual(DEFAULT_BFL_CONFIG);
  });

  it('reports every problem of a YAML file at file:line:col, and never names a key under accounts', () => {
    const text = [
      'time_scale: 0',
      'limits:',
      '  active_taks: 10',
      'models:',
      '  flux-pro-1.1:',
      '    seconds: [9, 3]',
      'accounts:',
      '  - id: a',
      '    bfl-secret-value: 1',
    ].join('\n');
    let problems: readonly string[] = [];
    try {
      parseBflConfigText(text, 'bfl.yaml');
    } catch (error) {
      problems = (error as { problems: readonly string[] }).problems;
      expect((error as Error).message).toBe('invalid bfl emulator config bfl.yaml (4 problems)');
    }
    expect(problems).toEqual([
      'bfl.yaml:1:13 time_scale: Too small: expected number to be >0',
      'bfl.yaml:3:3 limits.active_taks: unknown key',
      expect.stringMatching(
        /^bfl\.yaml:6:14 models\.flux-pro-1\.1\.seconds: the first value \(min\) must not exceed/,
      ),
      'bfl.yaml:9:5 accounts[0]: unknown key (its name is not shown: it may be a secret)',
    ]);
    expect(problems.join('\n')).not.toContain('bfl-secret-value');
  });

  it('loads a file, and names a missing one', () => {
    const dir = tempDir();
    const file = join(dir, 'bfl.yaml');
    writeFileSync(file, 'port: 0\npolling_host: localhost\nlimits:\n  active_tasks: 5\n');
    expect(loadBflConfig(file)).toMatchObject({ polling_host: 'localhost', limits: { active_tasks: 5 } });
    expect(() => loadBflConfig(join(dir, 'none.yaml'))).toThrow(/no such file/);
    expect(() => parseBflConfig({ polling_host: 'not a host/' })).toThrow(/invalid bfl emulator config/);
    expect(() =>
      parseBflConfig({ accounts: [{ id: 'x', keys: [{ key: 'same' }, { key: 'same' }] }] }),
    ).toThrow(/invalid bfl emulator config/);
  });
});
