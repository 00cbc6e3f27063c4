// The same catalog on each provider, end to end: a real Temporal dev server, pixelmill's workers in
// this process, and the provider's emulator over HTTP on a compressed clock. Each run must end with
// every item's images stored and checked, through the provider's own way of learning states (a
// list sweep for Replicate, one call per task for fal and BFL), its failures mapped to pixelmill's
// words, and a concurrency limit it was not told kept without a storm of refusals.
import './support/quiet-runtime.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUED_START } from '../workflows/concurrency-cap.js';
import { runWorkflowId } from '../common/names.js';
import type { RunResult } from '../common/types.js';
import { startBflEmulator, DEMO_BFL_KEY } from '../emulator/bfl/index.js';
import { JWKS_PATH } from '../emulator/fal/index.js';
import { replicateSecretFetcher } from '../providers/replicate/index.js';
import { webhookBaseUrl } from '../webhook/route.js';
import { startWebhookServer } from '../webhook/server.js';
import { temporalSignaller } from '../webhook/signal.js';
import { receiverVerifiers } from '../webhook/verifiers.js';
import { startFalEmulator, DEMO_FAL_KEY } from '../emulator/fal/index.js';
import { startReplicateEmulator, DEMO_REPLICATE_TOKEN } from '../emulator/replicate/index.js';
import type { StartedEmulator } from '../emulator/providers.js';
import { loadManifest } from '../manifest/load.js';
import { startInProcessWorkers, startRun, startTemporalHarness } from './support/catalog-harness.js';

const WEBHOOK_SECRET = 'providers-run-secret';
const KEYS = {
  FAL_KEY: DEMO_FAL_KEY,
  REPLICATE_API_TOKEN: DEMO_REPLICATE_TOKEN,
  BFL_API_KEY: DEMO_BFL_KEY,
  // BFL signs with the secret a submit gives it.
  PIXELMILL_WEBHOOK_SECRET: WEBHOOK_SECRET,
};
/** Generation in tens of milliseconds. */
const TIME_SCALE = 0.02;

let env: TestWorkflowEnvironment;
let dir: string;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ({ env, dir } = await startTemporalHarness());
  // One set of workers serves every provider's runs: each run's plan names its provider, and the
  // key comes from the variable its manifest names.
  await startInProcessWorkers(env, { env: KEYS });
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

type Provider = 'fal' | 'replicate' | 'bfl';

async function emulator(provider: Provider, config: Record<string, unknown> = {}): Promise<StartedEmulator> {
  const options = { config: { time_scale: TIME_SCALE, port: 0, ...config } as never };
  const started =
    provider === 'fal'
      ? await startFalEmulator(options)
      : provider === 'replicate'
        ? await startReplicateEmulator(options)
        : await startBflEmulator(options);
  closers.push(() => started.close());
  return started;
}

const KEY_ENV: Record<Provider, keyof typeof KEYS> = {
  fal: 'FAL_KEY',
  replicate: 'REPLICATE_API_TOKEN',
  bfl: 'BFL_API_KEY',
};

/** Writes and runs a catalog of `items` prompts on `provider` at `baseUrl`; resolves with its result. */
async function runCatalog(
  provider: Provider,
  baseUrl: string,
  name: string,
  prompts: string[],
  extra = '',
  webhookBase?: string,
): Promise<{ result: RunResult; outputDir: string }> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `api: { provider: ${provider}, base_url: "${baseUrl}", api_key_env: ${KEY_ENV[provider]} }`,
      'defaults: { size: "16:9" }',
      `output: ./${name}-out`,
      extra,
      'items:',
      ...prompts.map((prompt, i) => `  - ${JSON.stringify({ id: `item-${i}`, prompt })}`),
    ].join('\n'),
  );
  const catalog = {
    file,
    hash: loadManifest(file).hash,
    outputDir: join(dir, `${name}-out`),
    runId: runWorkflowId(name),
  };
  const handle = await startRun(
    env.client,
    catalog,
    undefined,
    webhookBase ? { webhookBaseUrl: webhookBase } : {},
  );
  return { result: await handle.result(), outputDir: join(dir, `${name}-out`) };
}

interface ReportLine {
  id: string;
  status: string;
  task_id: string | null;
  attempts: number;
  credits_cost: number;
  images: { path: string; sha256: string; width: number; height: number; checks?: { level: string }[] }[];
  error: { type: string; code: string } | null;
}

function report(outputDir: string): ReportLine[] {
  return readFileSync(join(outputDir, 'report.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ReportLine);
}

const prompts = (count: number, word = 'chair') =>
  Array.from({ length: count }, (_, i) => `a ${word} number ${i}`);

describe.each<Provider>(['fal', 'replicate', 'bfl'])('a catalog on %s', (provider) => {
  it('stores every image, checked, at the size each item asked for', async () => {
    const api = await emulator(provider);
    const { result, outputDir } = await runCatalog(provider, api.url, `${provider}-catalog`, prompts(30));
    expect(result.counts.completed).toBe(30);
    const lines = report(outputDir);
    expect(lines).toHaveLength(30);
    for (const line of lines) {
      expect(line.status).toBe('completed');
      // The provider's own id, not pixelmill's locator.
      expect(line.task_id).not.toContain('|');
      expect(line.images).toHaveLength(1);
      const [image] = line.images;
      // 16:9 at 1K: a long side of about 1024 px, or a megapixel (Replicate's FLUX).
      const side = Math.min(
        Math.abs(image!.width - 1024),
        Math.abs(Math.sqrt(image!.width * image!.height) - 1024),
      );
      expect(side / 1024).toBeLessThan(0.15);
      expect(Math.abs(image!.width / image!.height - 16 / 9)).toBeLessThan(0.04);
      // Checked, and passed every check at its level (none failed with `error`).
      expect(image!.checks?.every((check) => check.level !== 'error') ?? true).toBe(true);
    }
    const summary = JSON.parse(readFileSync(join(outputDir, 'summary.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(summary.provider).toBe(provider);
    // fal and Replicate report no cost: the manifest's pricing (here the default) estimates it.
    expect(summary.credits_estimated).toBe(provider === 'bfl' ? undefined : true);
    expect(result.creditsSpent).toBeGreaterThan(0);
  });

  it('maps a moderated prompt to content_policy_violation, not retried', async () => {
    const api = await emulator(provider);
    const { result, outputDir } = await runCatalog(provider, api.url, `${provider}-moderated`, [
      'a chair',
      'a forbidden chair',
    ]);
    expect(result.counts).toMatchObject({ completed: 1, failed: 1 });
    const refused = report(outputDir).find((line) => line.id === 'item-1')!;
    expect(refused.error?.type).toBe('content_policy_violation');
    expect(refused.attempts).toBe(1);
  });
});

describe.each<Provider>(['fal', 'replicate', 'bfl'])('webhooks from %s', (provider) => {
  it('announce every task, verified its own way: about one API call per image', async () => {
    const api = await emulator(provider);
    const keys = {
      secret: WEBHOOK_SECRET,
      extra: {
        fal: { jwksUrl: `${api.url}${JWKS_PATH}` },
        replicate: {
          fetchSecret: replicateSecretFetcher({ baseUrl: api.url, apiKey: DEMO_REPLICATE_TOKEN }),
        },
      },
    };
    const receiver = await startWebhookServer({
      signal: temporalSignaller(env.client),
      verifierFor: receiverVerifiers(keys, [provider]),
      log: () => undefined,
    });
    closers.push(() => receiver.close());
    const { result } = await runCatalog(
      provider,
      api.url,
      `${provider}-hooked`,
      prompts(30),
      'webhooks: { enabled: true }',
      webhookBaseUrl(receiver.url, provider),
    );
    expect(result.counts.completed).toBe(30);
    // Every task was announced and taken from its signal, none refused as forged.
    expect(receiver.counts.signalled).toBe(30);
    expect(receiver.counts.unauthorized).toBe(0);
    const calls = result.apiCalls.submit + result.apiCalls.lookup + result.apiCalls.get;
    expect(calls / 30).toBeLessThanOrEqual(1.2);
  });
});

describe('fal without webhooks', () => {
  const routes = (api: StartedEmulator) =>
    (api.stats() as { requests: Record<string, Record<string, number>> }).requests;
  const total = (byStatus: Record<string, number> | undefined) =>
    Object.values(byStatus ?? {}).reduce((sum, count) => sum + count, 0);
  const STREAM = 'GET /{owner}/{app}/requests/{request_id}/status/stream';
  const STATUS = 'GET /{owner}/{app}/requests/{request_id}/status';

  it("learns each request's end from its status stream: a stream an image, no status call", async () => {
    const api = await emulator('fal');
    const { result } = await runCatalog('fal', api.url, 'fal-streamed', prompts(30));
    expect(result.counts.completed).toBe(30);
    expect(total(routes(api)[STREAM])).toBe(30);
    expect(routes(api)[STATUS]).toBeUndefined();
    // The streams are the run's lookups, in its own count: submit, stream, result.
    expect(result.apiCalls).toEqual({ submit: 30, lookup: 30, get: 30 });
  });

  it('loses nothing when streams break: what a stream missed, the shard looks up', async () => {
    // A third of the status calls, streams included, answered 503.
    const api = await emulator('fal', { faults: { server_error_rates: { status: 0.3 } } });
    const { result } = await runCatalog('fal', api.url, 'fal-streams-broken', prompts(12));
    expect(result.counts.completed).toBe(12);
    expect(routes(api)[STREAM]?.['503']).toBeGreaterThan(0);
    expect(total(routes(api)[STATUS])).toBeGreaterThan(0);
  });
});

describe('the deadline', () => {
  it('cancels at the provider what it has not started (Replicate): cancelled, not billed; what ran is stored', async () => {
    // Predictions wait 2 to 12 s to start: at a deadline of 6 s (1 s a lookup), some of the catalog's
    // have not, even where a loaded machine took seconds to send the first submits.
    const api = await emulator('replicate', { time_scale: 1, generation: { queue_seconds: [2, 12] } });
    const limits = 'limits: { requests_per_second: 100, deadline: "6s" }';
    const { result, outputDir } = await runCatalog(
      'replicate',
      api.url,
      'replicate-deadline',
      prompts(60),
      limits,
    );
    const lines = report(outputDir);
    const cancelled = lines.filter((line) => line.status === 'cancelled');
    const submittedThenCancelled = cancelled.filter((line) => line.task_id !== null);
    expect(result.counts.completed).toBeGreaterThan(0);
    expect(submittedThenCancelled.length).toBeGreaterThan(0);
    for (const line of cancelled) expect(line.error?.code).toBe('deadline');
    for (const line of lines.filter((line) => line.status === 'completed'))
      expect(line.images).toHaveLength(1);
    expect(result.counts.completed + result.counts.cancelled).toBe(60);
    const stats = api.stats() as { billing: { canceled_before_start_unbilled: number } };
    // Cancelled where they waited, unbilled; but a task that starts between its last lookup and its
    // cancel (a round trip) is cancelled running, as the provider bills it: a few at most.
    expect(stats.billing.canceled_before_start_unbilled).toBeGreaterThanOrEqual(
      Math.floor(0.9 * submittedThenCancelled.length),
    );
  });
});

describe('concurrency limits the run was not told', () => {
  it('BFL: keeps about its 24 active tasks with few refusals, and stores everything', async () => {
    const api = await emulator('bfl', { generation: { queue_seconds: [0, 0] } });
    const { result } = await runCatalog(
      'bfl',
      api.url,
      'bfl-concurrency',
      prompts(120),
      'limits: { max_in_flight: 500 }',
    );
    expect(result.counts.completed).toBe(120);
    const stats = api.stats() as { requests: Record<string, Record<string, number>> };
    const refused = Object.values(stats.requests).reduce((sum, byStatus) => sum + (byStatus['429'] ?? 0), 0);
    // One refusal per cap's worth of images at most, plus the start: never a storm.
    expect(refused).toBeLessThan(20);
  });

  it('BFL: a run whose first submit finds every slot taken by others tries again, with no task of its own to wait for', async () => {
    // Another client's tasks hold the account's 3 slots for 3 s: the run's first submit is
    // refused while it has nothing at the provider (as a run's next shard, handed the lane while
    // its predecessor's tasks still run). No task of its own will finish to wake it.
    const api = await emulator('bfl', {
      limits: { active_tasks: 3 },
      models: { 'flux-pro-1.1-ultra': { seconds: [150, 150] } },
      generation: { queue_seconds: [0, 0] },
    });
    for (let i = 0; i < 3; i++) {
      const answer = await fetch(`${api.url}/v1/flux-pro-1.1-ultra`, {
        method: 'POST',
        headers: { 'x-key': DEMO_BFL_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: `another client's task ${i}` }),
      });
      expect(answer.status).toBe(200);
    }
    const { result } = await runCatalog('bfl', api.url, 'bfl-slots-taken', prompts(12));
    expect(result.counts.completed).toBe(12);
    const stats = api.stats() as { requests: Record<string, Record<string, number>> };
    const refused = Object.values(stats.requests).reduce((sum, byStatus) => sum + (byStatus['429'] ?? 0), 0);
    expect(refused).toBeGreaterThan(0);
  });

  // fal's submit answer may or may not carry queue_position (docs/emulators/fal.md): the cap is
  // read from submits' answers where it does, from lookups of queued tasks where it does not.
  it.each([true, false])(
    'fal: finds a concurrency of 6 it was not told, and leaves little waiting in its queue (queue position at submit: %s)',
    async (positionAtSubmit) => {
      // Generations long enough that a cap not held down would fill the queue with the catalog.
      const api = await emulator('fal', {
        concurrency: 6,
        queue_position_at_submit: positionAtSubmit,
        time_scale: 0.1,
      });
      // A fixed rate well above what 6 slots need: the concurrency is what limits here.
      const limits = 'limits: { requests_per_second: 100 }';
      const { result } = await runCatalog(
        'fal',
        api.url,
        `fal-concurrency-${positionAtSubmit}`,
        prompts(200),
        limits,
      );
      expect(result.counts.completed).toBe(200);
      const stats = api.stats() as {
        peak_in_progress: number;
        retention: { results_deleted_unfetched: number };
      };
      // Found (every slot used at once), and nothing left in its queue long enough to be deleted.
      expect(stats.peak_in_progress).toBe(6);
      expect(stats.retention.results_deleted_unfetched).toBe(0);
      // Kept near what runs: never most of the catalog waiting in fal's queue at once.
      // Its first guess waits in the queue at the start (QUEUED_START), then the queue is held near
      // the margin. A cap no signal held down grows by one a finished task, and the queue with it
      // (75 waiting measured so, with the lookups' signal taken out).
      expect(await peakWaiting(api.url)).toBeLessThanOrEqual(QUEUED_START + 12);
    },
  );
});

/** The most requests waiting in the fal emulator's queue at once, from its record of each request. */
async function peakWaiting(url: string): Promise<number> {
  const text = await (await fetch(`${url}/_emulator/requests`)).text();
  const edges: [number, number][] = [];
  for (const line of text.split('\n').filter(Boolean)) {
    const request = JSON.parse(line) as { submitted_at_ms: number; started_at_ms: number | null };
    edges.push([request.submitted_at_ms, 1]);
    if (request.started_at_ms !== null) edges.push([request.started_at_ms, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let waiting = 0;
  let peak = 0;
  for (const [, delta] of edges) peak = Math.max(peak, (waiting += delta));
  return peak;
}
