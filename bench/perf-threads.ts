// Sums up a `perf record -g` of one node process (the CLI, or a script baseline) by what its
// threads do, in ms of CPU per image: V8 CPU profiles see only JavaScript threads, and /proc only
// thread totals, while the gap to a script is spread over libvips's and libuv's threads, V8's
// helpers, the Temporal core and the workflow sandbox. Each sample is put in one part:
//
// - main, with three shares of it: the Temporal SDK (a frame of @temporalio, rxjs or the core
//   bridge in its stack), node's promise hooks (async_hooks frames: they run for every promise
//   once an AsyncLocalStorage is in use, as Temporal's activity context is), and the rest;
// - the workflow sandbox's thread (the thread other than main that runs the workflow bundle);
// - the Temporal core (tokio's threads);
// - libvips's workers;
// - V8's platform workers (concurrent marking and compiling);
// - node's other threads (libuv's pool: file I/O and sharp's pipelines).
//
//   perf record -F 999 -g -p <pid> -o cli.data -- sleep 15
//   node dist/bench/perf-threads.js cli.data --images <images stored in those 15 s>
//
// Run node with --perf-basic-prof-only-functions for JavaScript frames to have names; without
// it, the main thread's shares fall into "the rest".
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

type Part =
  | 'main: the Temporal SDK'
  | 'main: promise hooks'
  | 'main: the rest'
  | 'the workflow sandbox'
  | 'the Temporal core (tokio)'
  | "libvips's workers"
  | "V8's platform workers"
  | "node's other threads (libuv's pool)";

interface Sample {
  pid: string;
  tid: string;
  comm: string;
  /** Its frames, one a line, innermost first. */
  stack: string;
}

const TEMPORAL_SDK = /@temporalio|rxjs|core-bridge|temporal_sdk/;
const PROMISE_HOOKS = /async_hooks/;
const WORKFLOW_BUNDLE = /workflow-bundle\.js/;

function partOf(sample: Sample, workflowTid: string | undefined): Part {
  const { stack } = sample;
  if (sample.tid === sample.pid) {
    if (TEMPORAL_SDK.test(stack)) return 'main: the Temporal SDK';
    if (PROMISE_HOOKS.test(stack)) return 'main: promise hooks';
    return 'main: the rest';
  }
  if (sample.tid === workflowTid) return 'the workflow sandbox';
  if (/tokio/.test(sample.comm) || /tokio/.test(stack)) return 'the Temporal core (tokio)';
  if (/vips/.test(sample.comm)) return "libvips's workers";
  if (/WorkerThreadsTaskRunner|platform/i.test(stack)) return "V8's platform workers";
  return "node's other threads (libuv's pool)";
}

/** The samples of `perf script`, each a header line (comm pid/tid) and its stack, one frame a line. */
async function readSamples(file: string): Promise<Sample[]> {
  const perf = spawn('perf', ['script', '-i', file, '-F', 'comm,pid,tid,ip,sym,dso'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    perf.once('error', reject);
    perf.once('close', resolve);
  });
  const samples: Sample[] = [];
  let current: Sample | undefined;
  for await (const line of createInterface({ input: perf.stdout })) {
    if (line.trim() === '') {
      current = undefined;
      continue;
    }
    if (current) {
      current.stack += `${line.trim()}\n`;
      continue;
    }
    const header = /^\s*(.*?)\s+(\d+)\/(\d+)\s*$/.exec(line);
    if (!header) continue;
    current = { comm: header[1]!, pid: header[2]!, tid: header[3]!, stack: '' };
    samples.push(current);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`perf script -i ${file} exited with ${code}`);
  return samples;
}

/** The thread, other than main, with the most samples in the workflow bundle's code. */
function workflowThread(samples: readonly Sample[]): string | undefined {
  const counts = new Map<string, number>();
  for (const sample of samples) {
    if (sample.tid === sample.pid || !WORKFLOW_BUNDLE.test(sample.stack)) continue;
    counts.set(sample.tid, (counts.get(sample.tid) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { images: { type: 'string' }, frequency: { type: 'string', default: '999' } },
  });
  const file = positionals[0];
  const images = Number(values.images);
  const frequency = Number(values.frequency);
  if (!file || !(images > 0) || !(frequency > 0)) {
    throw new Error('usage: perf-threads.js PERF_DATA --images N [--frequency HZ, as recorded: 999]');
  }
  const samples = await readSamples(file);
  const workflowTid = workflowThread(samples);
  const parts = new Map<Part, number>();
  for (const sample of samples) {
    const part = partOf(sample, workflowTid);
    parts.set(part, (parts.get(part) ?? 0) + 1);
  }
  const msPerImage = (count: number): string => ((count * 1000) / frequency / images).toFixed(2);
  const rows = [...parts].sort((a, b) => b[1] - a[1]);
  process.stdout.write(
    `${samples.length} samples at ${frequency} Hz, ${images} images: ${msPerImage(samples.length)} ms of CPU per image\n` +
      rows.map(([part, count]) => `${msPerImage(count).padStart(7)} ms  ${part}`).join('\n') +
      '\n',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`perf-threads: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
