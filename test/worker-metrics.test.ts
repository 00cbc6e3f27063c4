// A `pixelmill worker --metrics-port` process serving a run on a real dev server, against the
// emulator over HTTP: its /metrics, scraped while the run runs and after it, has the SDK's
// metrics and pixelmill's on one endpoint, and pixelmill's counters agree with the run's report
// (summary.json, report.jsonl) and with what the API itself counted (the emulator's stats): API
// calls by group and status, the 429s of a submit limit the rate governor has to discover, items
// by state (a blocked prompt fails), images, bytes and the check failures of square images sent
// for a 16:9 item. Every query of the Grafana dashboard (deploy/grafana) names metrics that scrape
// really has. A port in use costs one line at start, never the worker.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportLine } from '../activities/index.js';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import { METRIC_NAMES } from '../metrics/worker-metrics.js';
import { CLI, collectOutput, freePort, type CliResult } from './support/cli.js';
import { startTestEmulator } from './support/emulator.js';
import { Scrape } from './support/prometheus-text.js';
import { startDevServerEnv } from './support/temporal.js';
import { waitUntil } from './support/wait.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DASHBOARD = join(ROOT, 'deploy/grafana/dashboards/pixelmill-workers.json');
const ITEMS = 30;
/** The item whose prompt the emulator's content policy blocks: it fails, alone. */
const BLOCKED = 7;

let env: TestWorkflowEnvironment;
let emulator: RunningEmulator;
let dir: string;
let worker: { child: ChildProcess; output: () => string; exited: Promise<unknown> };
let metricsUrl: string;
let account: string;

/** Nothing of this machine's Temporal or pixelmill settings: only what a test gives. */
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(TEMPORAL|PIXELMILL)_/.test(name)));

function startWorker(args: string[], extraEnv: NodeJS.ProcessEnv = {}): typeof worker {
  const child = spawn(process.execPath, [CLI, 'worker', ...args], {
    cwd: dir,
    env: {
      ...cleanEnv(),
      TEMPORAL_ADDRESS: env.address,
      PIXELMILL_API_BASE_URL: emulator.url,
      PIXELMILL_API_KEY: DEMO_API_KEY,
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output, exited: new Promise((resolve) => child.once('exit', resolve)) };
}

async function connected(started: typeof worker): Promise<void> {
  await waitUntil(
    'the worker to connect',
    () => {
      if (started.child.exitCode !== null) throw new Error(`pixelmill worker exited:\n${started.output()}`);
      return started.output().includes('pixelmill worker connected');
    },
    60_000,
  );
}

async function stop(started: typeof worker | undefined): Promise<void> {
  if (!started) return;
  if (started.child.exitCode === null) started.child.kill('SIGTERM');
  await started.exited;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pixelmill-worker-metrics-'));
  env = await startDevServerEnv();
  emulator = await startTestEmulator({
    time_scale: 0.01,
    // Below the governor's starting rate (4/s): it meets 429s before it finds the limit.
    rate_limits: { submit: { per_second: 2, burst: 2 }, query: { per_second: 200, burst: 200 } },
    generation: { blocked_words: ['forbidden'] },
    faults: { wrong_aspect_image_rate: 0.3 },
  });
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  // The port from the environment, as the compose file sets it.
  worker = startWorker([], { PIXELMILL_METRICS_PORT: String(port) });
  await connected(worker);
  account = /serving API account (a[0-9a-f]{16}) \(/.exec(worker.output())![1]!;
}, 120_000);

afterAll(async () => {
  await stop(worker);
  await env?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `pixelmill run FILE --wait` through the cluster, served by the worker above. */
function runManifest(): { file: string; out: string; done: Promise<CliResult> } {
  const file = join(dir, 'metrics.yaml');
  const out = join(dir, 'out');
  writeFileSync(
    file,
    [
      'name: metrics',
      `output: ${out}`,
      // The square images the emulator sends for some 16:9 items are kept, with a warning.
      'checks: { aspect_ratio: warn }',
      'defaults: { size: "16:9" }',
      'items:',
      ...Array.from(
        { length: ITEMS },
        (_, i) => `  - { id: p${i}, prompt: "${i === BLOCKED ? 'a forbidden' : 'a metered'} product ${i}" }`,
      ),
    ].join('\n'),
  );
  const child = spawn(
    process.execPath,
    [CLI, 'run', file, '--wait', '--no-progress', '--api-account', account],
    {
      cwd: dir,
      env: { ...cleanEnv(), HOME: dir, TEMPORAL_ADDRESS: env.address, PIXELMILL_API_BASE_URL: emulator.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return { file, out, done: collectOutput(child, 240_000) };
}

interface Summary {
  counts: Record<string, number>;
  images: number;
  api_calls: { submit: number; lookup: number; get: number };
  checks: { failed: Record<string, { error: number; warn: number }> };
}

/** What the emulator answered, per route and status: the API's own count. */
function answered(route: (pattern: string) => boolean, status?: (code: string) => boolean): number {
  let total = 0;
  for (const [pattern, byStatus] of Object.entries(emulator.stats().requests)) {
    if (!route(pattern)) continue;
    for (const [code, count] of Object.entries(byStatus)) if (!status || status(code)) total += count;
  }
  return total;
}
const submits = (pattern: string): boolean => pattern.endsWith('/v1/images/generations');
const queries = (pattern: string): boolean => / \/v1\/tasks\//.test(pattern);

let ran: Promise<{ during: Scrape; after: Scrape; summary: Summary; report: ReportLine[] }> | undefined;
/** The run, once for the file: scraped while it runs and once it has ended. */
function meteredRun() {
  ran ??= (async () => {
    const run = runManifest();
    let finished = false;
    void run.done.then(() => (finished = true));
    // While the run runs: its calls are counted as they are made.
    const during = await waitUntil('a scrape with API calls, before the run ends', async () => {
      if (finished) throw new Error(`the run ended before a scrape saw a call:\n${(await run.done).stderr}`);
      const scrape = await Scrape.of(metricsUrl);
      return scrape.sum(`${METRIC_NAMES.apiCalls}_total`) > 0 ? scrape : undefined;
    });
    const result = await run.done;
    // 3: items not completed (the blocked one).
    expect(result.code, result.stderr + result.stdout).toBe(3);
    const summary = JSON.parse(readFileSync(join(run.out, 'summary.json'), 'utf8')) as Summary;
    const report = readFileSync(join(run.out, 'report.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ReportLine);
    // The outcome lines are counted as they are appended, before the report is written; the
    // exporter may show an add a moment later.
    const after = await waitUntil('every item counted', async () => {
      const scrape = await Scrape.of(metricsUrl);
      return scrape.sum(`${METRIC_NAMES.items}_total`) >= ITEMS ? scrape : undefined;
    });
    return { during, after, summary, report };
  })();
  return ran;
}

describe('pixelmill worker --metrics-port', () => {
  it('counts a run as its report does: calls, 429s, items by state, images, bytes, check failures', async () => {
    const { during, after, summary, report } = await meteredRun();
    const calls = `${METRIC_NAMES.apiCalls}_total`;

    // A counter moved between the scrape during the run and the one after it.
    expect(after.sum(calls)).toBeGreaterThan(during.sum(calls));
    expect(summary.counts).toMatchObject({ completed: ITEMS - 1, failed: 1 });

    // Items by the report's state.
    const items = after.by(`${METRIC_NAMES.items}_total`, 'state');
    expect(items).toEqual(
      Object.fromEntries(Object.entries(summary.counts).filter(([, count]) => count > 0)),
    );
    // Images and bytes stored, as report.jsonl lists them.
    const images = report.flatMap((line) => line.images);
    expect(after.sum(`${METRIC_NAMES.imagesStored}_total`)).toBe(summary.images);
    expect(images).toHaveLength(summary.images);
    expect(after.sum(`${METRIC_NAMES.storedBytes}_total`)).toBe(
      images.reduce((sum, image) => sum + image.bytes, 0),
    );
    // Check failures by check and level.
    const warned = summary.checks.failed.aspect_ratio?.warn ?? 0;
    expect(warned).toBeGreaterThan(0);
    expect(after.sum(`${METRIC_NAMES.checkFailures}_total`, { check: 'aspect_ratio', level: 'warn' })).toBe(
      warned,
    );
    expect(after.sum(`${METRIC_NAMES.checkFailures}_total`)).toBe(warned);

    // API calls by group: the report's, and the API's own count, 429s included.
    expect(after.sum(calls, { group: 'submit' })).toBe(summary.api_calls.submit);
    expect(after.sum(calls, { group: 'query' })).toBe(summary.api_calls.lookup + summary.api_calls.get);
    expect(after.sum(calls, { group: 'submit' })).toBe(answered(submits));
    expect(after.sum(calls, { group: 'query' })).toBe(answered(queries));
    const refused = answered(submits, (code) => code === '429');
    expect(refused).toBeGreaterThan(0);
    expect(after.sum(calls, { group: 'submit', status: '429' })).toBe(refused);
    expect(after.sum(`${METRIC_NAMES.rateLimited}_total`, { group: 'submit', limit: 'rate' })).toBe(refused);
    expect(after.sum(calls, { group: 'submit', status: 'ok' })).toBe(
      answered(submits, (code) => code === '200'),
    );

    // The rate in force per group, discovered under the emulator's 2/s.
    const rates = after.by(METRIC_NAMES.rateInForce, 'group');
    expect(Object.keys(rates).sort()).toEqual(['query', 'submit']);
    expect(rates.submit).toBeGreaterThan(0);
    expect(rates.submit).toBeLessThan(4);

    // Bounded labels: the provider and the account, never an item, a task or a URL.
    for (const sample of after.samples.filter((each) => each.name.startsWith('pixelmill_'))) {
      expect(sample.labels).toMatchObject({ account, provider: 'apimart' });
      for (const value of Object.values(sample.labels)) expect(value).not.toMatch(/p\d+|https?:|sk-/);
    }
    // The SDK's own metrics on the same endpoint.
    expect(after.names()).toContain('temporal_activity_schedule_to_start_latency_bucket');
    expect(after.names()).toContain('temporal_workflow_task_execution_latency_bucket');
    expect(after.names()).toContain('temporal_sticky_cache_size');
  }, 300_000);

  it("has the Grafana dashboard query only metrics the worker exports, every one of pixelmill's among them", async () => {
    const { after } = await meteredRun();
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
      panels: { title: string; targets?: { expr: string }[] }[];
      templating: { list: { name: string; query: { query: string } }[] };
    };
    const queries = [
      ...dashboard.panels.flatMap((panel) =>
        (panel.targets ?? []).map((target) => [panel.title, target.expr]),
      ),
      ...dashboard.templating.list.map((variable) => [`$${variable.name}`, variable.query.query]),
    ];
    const exported = after.names();
    const used = new Set<string>();
    for (const [where, query] of queries) {
      const names: string[] = query!.match(/\b(pixelmill|temporal)_[a-z0-9_]+/g) ?? [];
      expect(names.length, `${where}: ${query}`).toBeGreaterThan(0);
      for (const name of names) {
        expect(exported, `${where}: ${name}`).toContain(name);
        used.add(name);
      }
      // Labels the queries filter and group by are labels the metrics have.
      for (const [, label] of query!.matchAll(/[{,(]\s*([a-z_]+)\s*=~/g)) {
        const sample = after.samples.find((each) => names.includes(each.name));
        expect(Object.keys(sample!.labels), `${where}: ${label}`).toContain(label);
      }
    }
    const gauges = new Set<string>([METRIC_NAMES.rateInForce]);
    for (const name of Object.values(METRIC_NAMES))
      expect(used, name).toContain(gauges.has(name) ? name : `${name}_total`);
  }, 300_000);

  it('says in one line that a port in use is, and serves the run without metrics', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    let second: typeof worker | undefined;
    try {
      second = startWorker(['--metrics-port', String(port)]);
      await connected(second);
      const lines = second.output().split('\n');
      const complaints = lines.filter((line) => line.includes('metrics'));
      expect(complaints).toEqual([
        `pixelmill: metrics not served: 127.0.0.1:${port} is in use; the worker runs without them`,
      ]);
    } finally {
      await stop(second);
      await new Promise((resolve) => taken.close(resolve));
    }
  }, 120_000);
});
