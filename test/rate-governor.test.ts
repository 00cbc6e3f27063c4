// The adaptive rate governor end to end (issue #13): `pixelmill worker` processes on a real dev
// server, the real emulator over HTTP limiting each endpoint group to 40 calls/s, and manifests
// that name no rate. The emulator's request log is the judge of 429s and of each run's share.
import { beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@temporalio/client';
import { apiAccountId } from '../common/api-account.js';
import {
  governorViewQuery,
  governorWorkflowId,
  shardProgressQuery,
  shardWorkflowId,
} from '../common/names.js';
import type { RunResult } from '../common/types.js';
import { DEMO_API_KEY, type EmulatorConfigOverrides, type RunningEmulator } from '../emulator/index.js';
import type { GovernorView, RunRates } from '../governor/types.js';
import { INITIAL_PER_SECOND, SLOW_START_GROWTH } from '../governor/rate-law.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  spawnWorkerProcess,
  startRun,
  startTemporalHarness,
  writeCatalog,
} from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';
import { startTestEmulator } from './support/emulator.js';
import { busiestWindow, emulatorLines } from '../bench/catalog-audit.js';

const LIMIT = 40;
const LIMITED: EmulatorConfigOverrides = {
  time_scale: 0.01,
  rate_limits: {
    submit: { per_second: LIMIT, burst: LIMIT },
    query: { per_second: LIMIT, burst: LIMIT },
  },
};

let harness: Awaited<ReturnType<typeof startTemporalHarness>>;
beforeAll(async () => {
  harness = await startTemporalHarness();
}, 60_000);

interface Logged {
  t_ms: number;
  route: string;
  status: number;
}

/** The emulator's log of API calls (not its admin routes). */
async function apiRequests(emulator: RunningEmulator): Promise<Logged[]> {
  return (await emulatorLines<Logged>(emulator, 'requests')).filter((entry) => entry.route.includes('/v1/'));
}

/** A fresh emulator at LIMIT per group, one `pixelmill worker` serving it, and its account. */
async function limitedApi() {
  const { env, dir } = harness;
  const emulator = await startTestEmulator(LIMITED);
  const worker = spawnWorkerProcess(env.address, dir, emulator.url);
  await worker.ready;
  return { emulator, worker, apiAccount: apiAccountId(emulator.url, DEMO_API_KEY) };
}

/** Admitted calls per second of a route over its busiest stretch of `seconds`. */
function busiestStretch(calls: Logged[], route: string, seconds: number): number {
  const times = calls
    .filter((call) => call.route.includes(route) && call.status !== 429)
    .map((call) => call.t_ms)
    .sort((a, b) => a - b);
  return busiestWindow(times, seconds * 1000) / seconds;
}

const refusedShare = (calls: Logged[]): number =>
  calls.filter((call) => call.status === 429).length / calls.length;

const items = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i}`, prompt: `${prefix} product ${i}` }));

async function governorView(client: Client, account: string): Promise<GovernorView> {
  return client.workflow.getHandle(governorWorkflowId(account)).query(governorViewQuery);
}

describe('a manifest with no rate, against a provider limiting each group to 40/s', () => {
  it('discovers the limit: the run completes with under 3% of its calls answered 429', async () => {
    const { env, dir } = harness;
    const { emulator, worker, apiAccount } = await limitedApi();
    const catalog = writeCatalog(dir, {
      name: 'discover',
      baseUrl: emulator.url,
      requestsPerSecond: 'auto',
      maxInFlight: 1000,
      // Finding the limit costs a few refusals once (slow start's last growth, the first probe
      // back up); a run of under a minute at the limit is long enough to make them a small share.
      items: items('d', 900),
    });
    const result = (await (
      await startRun(env.client, catalog, undefined, { apiAccount })
    ).result()) as RunResult;
    expect(result.counts).toMatchObject({ completed: 900, failed: 0 });
    const calls = await apiRequests(emulator);
    const share = refusedShare(calls);
    const t0 = calls[0]!.t_ms;
    const bySecond = new Map<number, string>();
    for (const call of calls) {
      const s = Math.floor((call.t_ms - t0) / 1000);
      const key = `${call.route.includes('generations') ? 'S' : 'Q'}${call.status === 429 ? 'x' : ''}`;
      bySecond.set(s, `${bySecond.get(s) ?? ''}${key}`);
    }
    console.log(
      [...bySecond.entries()]
        .map(([s, keys]) => {
          const count = (re: RegExp) => (keys.match(re) ?? []).length;
          return `${s}:${count(/S(?!x)/g)}/${count(/Sx/g)},${count(/Q(?!x)/g)}/${count(/Qx/g)}`;
        })
        .join(' '),
    );
    const view = await governorView(env.client, apiAccount);
    console.log(
      `discovered: ${calls.length} calls, ${(share * 100).toFixed(2)}% answered 429; ` +
        `submits ${view.groups.submit.ratePerSecond.toFixed(1)}/s (${view.groups.submit.source}), ` +
        `lookups ${view.groups.query.ratePerSecond.toFixed(1)}/s (${view.groups.query.source})`,
    );
    // Discovery's refusals (slow start's last growth, a probe back up) in a run of 40 s. Sharing two
    // cores with the suite's other files, the governor's cut reaches the workers later and a probe
    // costs more: 2.06% in a CI run beside the cluster's chaos run, 0.82% and 1.42% alone. The steady
    // figure (0.17% over 10,000 items, target 1%) is the benchmark's (BENCHMARKS.md).
    expect(share).toBeLessThan(0.03);
    // summary.json says what rates the run went at, and where they came from.
    const summary = JSON.parse(readFileSync(join(catalog.outputDir, 'summary.json'), 'utf8')) as {
      rates: RunRates;
    };
    expect(summary.rates.mode).toBe('auto');
    if (summary.rates.mode === 'auto')
      expect(['discovered', 'retry-after']).toContain(summary.rates.submit.source);
    // It found the limit: the submits went at it for a while, not at the starting rate...
    expect(busiestStretch(calls, 'generations', 5)).toBeGreaterThan(0.75 * LIMIT);
    // ...and the rate in force did not fall back. Its upper side is the 429 share above: a probe
    // goes past the last ceiling by design (the limit may have risen), by up to a quarter per
    // period until a 429 finds the limit again, so the rate in force when the run ends says where
    // the probe was then (CI saw 60.9/s against 40/s), not what the run sent.
    expect(view.groups.submit.ratePerSecond).toBeGreaterThan(0.75 * LIMIT);
    await worker.kill();
  }, 240_000);

  it('shares the account between two runs started together: both progress, together within the limit', async () => {
    const { env, dir } = harness;
    const { emulator, worker, apiAccount } = await limitedApi();
    const catalogs = ['left', 'right'].map((name) =>
      writeCatalog(dir, {
        name,
        baseUrl: emulator.url,
        requestsPerSecond: 'auto',
        maxInFlight: 1000,
        items: items(name, 200),
      }),
    );
    const handles = await Promise.all(
      catalogs.map((catalog) => startRun(env.client, catalog, undefined, { apiAccount })),
    );
    // While both submit: sample each run's submits. Submits answer one by one, so the samples
    // show the split of the rate; completions land 50 at a time, too coarse for a split.
    const samples: number[][] = [];
    let finishedRuns = 0;
    const results = handles.map((handle) =>
      handle.result().then((result) => {
        finishedRuns += 1;
        return result as RunResult;
      }),
    );
    // Each run has one shard: its progress query counts its submits as they come.
    const shards = catalogs.map((catalog) =>
      env.client.workflow.getHandle(shardWorkflowId(catalog.runId, 0)),
    );
    const bothSubmitting = (sample: number[] | undefined): boolean =>
      finishedRuns === 0 && (sample ?? []).every((submits) => submits < 200);
    while (bothSubmitting(samples.at(-1))) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const progress = await Promise.all(
        shards.map((shard) => shard.query(shardProgressQuery).catch(() => undefined)),
      );
      const sample = progress.map((p) => p?.apiCalls.submit ?? 0);
      if (bothSubmitting(sample)) samples.push(sample);
      else break;
    }
    for (const result of await Promise.all(results)) {
      expect(result.counts).toMatchObject({ completed: 200, failed: 0 });
    }
    const calls = await apiRequests(emulator);
    console.log(`two runs: ${calls.length} calls, ${(refusedShare(calls) * 100).toFixed(2)}% answered 429`);
    expect(refusedShare(calls)).toBeLessThan(0.05);
    // While both submitted, both progressed: at least a quarter each. The queues are served first come,
    // first served (measured 55/45 to 66/34); a server with task-queue fairness on splits them
    // evenly by the runs' fairness keys (50.4/49.6 in BENCHMARKS.md).
    const [firstSample, lastSample] = [samples[0]!, samples.at(-1)!];
    const gained = lastSample.map((done, run) => done - firstSample[run]!);
    const together = gained[0]! + gained[1]!;
    console.log(`while both submitted: ${gained.join(' and ')} submits, ${samples.length} samples`);
    expect(together).toBeGreaterThan(0);
    for (const share of gained) expect(share / together).toBeGreaterThanOrEqual(0.25);
    // Together within the limit: no one-second window of admitted submits far above it.
    expect(busiestStretch(calls, 'generations', 1)).toBeLessThanOrEqual(2 * LIMIT + 1); // the bucket's burst and its refill
    await worker.kill();
  }, 240_000);

  it('keeps what it learned when the worker dies: a new worker continues at the discovered rate', async () => {
    const { env, dir } = harness;
    const { emulator, worker: first, apiAccount } = await limitedApi();
    const catalog = writeCatalog(dir, {
      name: 'survivor',
      baseUrl: emulator.url,
      requestsPerSecond: 'auto',
      maxInFlight: 1000,
      items: items('s', 500),
    });
    const handle = await startRun(env.client, catalog, undefined, { apiAccount });
    // Learned: a rate grown well past the start. Whether a 429 has marked it `discovered` yet
    // depends on how fast the worker keeps up with its grant, which a loaded machine slows.
    const learned = await waitUntil(
      'the governor to learn a rate',
      async () => {
        const view = await governorView(env.client, apiAccount).catch(() => undefined);
        return view && view.groups.submit.ratePerSecond > LIMIT / 2 ? view : undefined;
      },
      120_000,
    );
    await first.kill();
    const second = spawnWorkerProcess(env.address, dir, emulator.url);
    await second.ready;
    // The emulator logs calls by this machine's clock.
    const restartedAt = Date.now();
    const atRestart = await governorView(env.client, apiAccount);
    const result = (await handle.result()) as RunResult;
    expect(result.counts).toMatchObject({ completed: 500, failed: 0 });
    const after = await governorView(env.client, apiAccount);
    console.log(
      `learned ${learned.groups.submit.ratePerSecond.toFixed(1)}/s before the kill, ` +
        `${after.groups.submit.ratePerSecond.toFixed(1)}/s (${after.groups.submit.source}) at the end`,
    );
    // The governor outlived the worker: its rate never went back to the start.
    expect(after.groups.submit.ratePerSecond).toBeGreaterThan(0.5 * LIMIT);
    // The new worker went on at the rate learned, not from the starting rate: the governor's grant
    // when it started was the learned one. Its first 3 s of submits are reported, not asserted:
    // slow start would send 4 + 6 + 9, the learned rate (shared with the dead worker until the
    // governor stops counting it) some 20 a second when the machine keeps up (40 and 96 alone), fewer
    // when the suite's other files hold the CPU (24 in a CI run).
    expect(atRestart.groups.submit.ratePerSecond).toBeGreaterThan(0.5 * learned.groups.submit.ratePerSecond);
    expect(atRestart.groups.submit.ratePerSecond).toBeGreaterThan(2 * INITIAL_PER_SECOND);
    const submits = (await apiRequests(emulator))
      .filter((call) => call.route.includes('generations') && call.status !== 429 && call.t_ms >= restartedAt)
      .map((call) => call.t_ms)
      .sort((a, b) => a - b);
    const firstSeconds = submits.filter((t) => t < submits[0]! + 3_000);
    const slowStart = INITIAL_PER_SECOND * (1 + SLOW_START_GROWTH + SLOW_START_GROWTH ** 2);
    console.log(
      `the new worker's first 3 s: ${firstSeconds.length} submits (slow start: ${slowStart}); ` +
        `the grant at its start ${atRestart.groups.submit.ratePerSecond.toFixed(1)}/s`,
    );
    await second.kill();
  }, 300_000);
});
