// Benchmark: how many API requests per second the emulator serves on one core, and what 100,000
// stored tasks cost it in memory. The emulator runs in its own process (one Node process = one
// core for its JavaScript); this process generates the load over keep-alive connections.
//
//   npm run bench:emulator -- [--seconds 10] [--connections 64] [--tasks 100000] [--json out.json]
//
// Target (issue: foundation): >= 2,000 requests/s, 100,000 tasks kept in memory.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { percentile } from './figures.js';

const KEY = 'sk-live-demo';

interface Options {
  seconds: number;
  connections: number;
  tasks: number;
  json?: string;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '10' },
      connections: { type: 'string', default: '64' },
      tasks: { type: 'string', default: '100000' },
      json: { type: 'string' },
    },
  });
  return {
    seconds: Number(values.seconds),
    connections: Number(values.connections),
    tasks: Number(values.tasks),
    ...(values.json ? { json: values.json } : {}),
  };
}

/** Starts `pixelmill emulator` as a child process with rate limits out of the way. */
async function startEmulatorProcess(): Promise<{ url: string; child: ChildProcess }> {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-bench-'));
  const config = join(dir, 'emulator.yaml');
  writeFileSync(
    config,
    [
      'port: 0',
      'time_scale: 0.001',
      'rate_limits:',
      '  submit: { per_second: 1000000000, burst: 1000000000 }',
      '  query: { per_second: 1000000000, burst: 1000000000 }',
      'accounts:',
      '  - { id: acct_bench, credits: 1000000000, keys: [{ key: sk-live-demo }] }',
    ].join('\n'),
  );
  const cli = fileURLToPath(new URL('../client/main.js', import.meta.url));
  const child = spawn(process.execPath, [cli, 'emulator', '--config', config], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  for await (const line of createInterface({ input: child.stdout! })) {
    const url = /listening on (\S+)/.exec(line)?.[1];
    if (url) return { url, child };
  }
  throw new Error('the emulator exited before it listened');
}

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

interface Tally {
  requests: number;
  byStatus: Record<string, number>;
  latenciesMs: number[];
}

async function call(
  pool: Pool,
  tally: Tally,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<string> {
  const started = performance.now();
  const response = await pool.request({
    method,
    path,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  tally.requests++;
  tally.byStatus[response.statusCode] = (tally.byStatus[response.statusCode] ?? 0) + 1;
  tally.latenciesMs.push(performance.now() - started);
  return text;
}

async function submit(pool: Pool, tally: Tally, i: number): Promise<string> {
  const text = await call(pool, tally, 'POST', '/v1/images/generations', {
    prompt: `bench item ${i}`,
    size: '1:1',
  });
  return (JSON.parse(text) as { data: { task_id: string }[] }).data[0]!.task_id;
}

/** A realistic mix for an orchestrator: 1 submit, 2 single GETs, 1 batch lookup of 100 ids. */
async function mixedLoad(pool: Pool, seconds: number, connections: number, ids: string[]): Promise<Tally> {
  const tally: Tally = { requests: 0, byStatus: {}, latenciesMs: [] };
  const deadline = performance.now() + seconds * 1000;
  let n = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const i = n++;
      const id = await submit(pool, tally, i);
      ids.push(id);
      await call(pool, tally, 'GET', `/v1/tasks/${id}`);
      await call(pool, tally, 'GET', `/v1/tasks/${ids[(i * 7919) % ids.length]}`);
      const start = (i * 100) % Math.max(1, ids.length - 100);
      await call(pool, tally, 'POST', '/v1/tasks/batch', { task_ids: ids.slice(start, start + 100) });
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return tally;
}

async function main(): Promise<void> {
  const opts = options();
  const { url, child } = await startEmulatorProcess();
  const pool = new Pool(url, { connections: opts.connections, keepAliveTimeout: 30_000 });
  try {
    const ids: string[] = [];
    const startedAt = performance.now();
    const tally = await mixedLoad(pool, opts.seconds, opts.connections, ids);
    const elapsed = (performance.now() - startedAt) / 1000;

    // Fill the store up to the task target, then measure the emulator's memory.
    const fill: Tally = { requests: 0, byStatus: {}, latenciesMs: [] };
    let next = ids.length;
    await Promise.all(
      Array.from({ length: opts.connections }, async () => {
        while (next < opts.tasks) await submit(pool, fill, next++);
      }),
    );
    const stats = JSON.parse(
      await (await pool.request({ method: 'GET', path: '/_emulator/stats' })).body.text(),
    ) as {
      tasks_total: number;
    };
    const sorted = tally.latenciesMs.sort((a, b) => a - b);
    const result = {
      benchmark: 'emulator-throughput',
      date: new Date().toISOString(),
      seconds: Number(elapsed.toFixed(2)),
      connections: opts.connections,
      requests: tally.requests,
      requests_per_second: Math.round(tally.requests / elapsed),
      status_counts: tally.byStatus,
      latency_ms: {
        p50: Number(percentile(sorted, 50).toFixed(2)),
        p99: Number(percentile(sorted, 99).toFixed(2)),
      },
      tasks_stored: stats.tasks_total,
      emulator_peak_rss_mb: Math.round(peakRssMb(child.pid!)),
    };
    console.table({
      'requests/s (target >= 2000)': result.requests_per_second,
      'non-200 answers': tally.requests - (tally.byStatus['200'] ?? 0),
      'latency p50 / p99 ms': `${result.latency_ms.p50} / ${result.latency_ms.p99}`,
      'tasks stored': result.tasks_stored,
      'emulator peak RSS MB': result.emulator_peak_rss_mb,
    });
    if (opts.json) writeFileSync(opts.json, `${JSON.stringify(result, null, 2)}\n`);
    else console.log(JSON.stringify(result));
  } finally {
    await pool.close();
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

await main();
