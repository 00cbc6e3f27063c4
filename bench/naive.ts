// The naive baseline: what a careful script without an orchestrator does. A fixed number of
// workers each take the next prompt, submit it (waiting out Retry-After on a 429), poll the task
// with GET using the spec's exponential backoff (1 s, doubling, at most 8 s; real seconds even
// though the emulator's generation time is compressed), and download every result to disk.
// It runs in its own process so that its peak RSS is measured like pixelmill's. With --rps R it is
// told the provider's rate and keeps to it: each endpoint group (submits; task GETs) spaces its
// calls 1/R s apart, a token bucket of burst 1 per group, as the emulator counts them.
//
//   node dist/bench/naive.js --url URL --items N [--concurrency 8] [--rps R] [--out DIR] [--deadline EPOCH_MS]
//
// The API key comes from PIXELMILL_API_KEY. Prints one JSON object (NaiveFigures) on stdout.
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Agent, request, type Dispatcher } from 'undici';
import { benchPrompt } from './catalog-files.js';

const NAIVE_BACKOFF = { firstMs: 1_000, factor: 2, maxMs: 8_000 };
const SERVER_ERROR_WAIT_MS = 1_000;

export interface NaiveFigures {
  finished: boolean;
  wall_s: number;
  items_completed: number;
  items_failed: number;
  images: number;
  bytes_stored: number;
}

interface NaiveOptions {
  url: string;
  apiKey: string;
  items: number;
  concurrency: number;
  /** Calls per second of each endpoint group; undefined: no pacing (429s are waited out). */
  rps?: number;
  outDir: string;
  deadline: number;
}

class DeadlinePassed extends Error {
  override name = 'DeadlinePassed';
}

interface TaskView {
  status: string;
  result?: { url: string[] };
}

/** Spaces calls 1/rate s apart: a token bucket of burst 1, shared by every worker of the client. */
class Pacer {
  private next = 0;

  constructor(private readonly rate: number) {}

  async acquire(): Promise<void> {
    const now = performance.now();
    const slot = Math.max(now, this.next);
    this.next = slot + 1000 / this.rate;
    if (slot > now) await sleep(slot - now);
  }
}

class NaiveClient {
  private readonly dispatcher: Dispatcher;
  private readonly pacers: { submit: Pacer; query: Pacer } | undefined;

  constructor(private readonly options: NaiveOptions) {
    this.dispatcher = new Agent({ connections: options.concurrency * 2, keepAliveTimeout: 30_000 });
    this.pacers = options.rps ? { submit: new Pacer(options.rps), query: new Pacer(options.rps) } : undefined;
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  private checkDeadline(): void {
    if (Date.now() > this.options.deadline) throw new DeadlinePassed('deadline passed');
  }

  /** One API call, repeated while the answer is 429 (after Retry-After) or 5xx (after 1 s). */
  private async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const pacer = path.startsWith('/v1/images/') ? this.pacers?.submit : this.pacers?.query;
    for (;;) {
      this.checkDeadline();
      await pacer?.acquire();
      const response = await request(`${this.options.url}${path}`, {
        method,
        dispatcher: this.dispatcher,
        headers: { authorization: `Bearer ${this.options.apiKey}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.body.text();
      if (response.statusCode === 200) return JSON.parse(text);
      if (response.statusCode === 429) {
        const retryAfter = Number(response.headers['retry-after'] ?? 1);
        await sleep(Math.max(0, Number.isFinite(retryAfter) ? retryAfter : 1) * 1000);
      } else if (response.statusCode >= 500) {
        await sleep(SERVER_ERROR_WAIT_MS);
      } else {
        throw new Error(`${method} ${path} answered ${response.statusCode}: ${text.slice(0, 200)}`);
      }
    }
  }

  private async submit(index: number): Promise<string> {
    const ack = (await this.call('POST', '/v1/images/generations', {
      prompt: benchPrompt(index),
      size: '1:1',
      resolution: '1K',
    })) as { data: { task_id: string }[] };
    return ack.data[0]!.task_id;
  }

  private async waitForTask(taskId: string): Promise<TaskView> {
    let delay = NAIVE_BACKOFF.firstMs;
    for (;;) {
      await sleep(delay);
      const task = ((await this.call('GET', `/v1/tasks/${taskId}`)) as { data: TaskView }).data;
      if (task.status === 'completed' || task.status === 'failed') return task;
      delay = Math.min(NAIVE_BACKOFF.maxMs, delay * NAIVE_BACKOFF.factor);
    }
  }

  private async download(url: string, file: string): Promise<number> {
    const response = await request(url, { dispatcher: this.dispatcher });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`GET ${url} answered ${response.statusCode}`);
    }
    let bytes = 0;
    response.body.on('data', (chunk: Buffer) => (bytes += chunk.length));
    await pipeline(response.body, createWriteStream(file));
    return bytes;
  }

  async run(): Promise<NaiveFigures> {
    const figures: NaiveFigures = {
      finished: false,
      wall_s: 0,
      items_completed: 0,
      items_failed: 0,
      images: 0,
      bytes_stored: 0,
    };
    mkdirSync(this.options.outDir, { recursive: true });
    let next = 1;
    const worker = async (): Promise<void> => {
      while (next <= this.options.items) {
        const index = next++;
        const task = await this.waitForTask(await this.submit(index));
        if (task.status !== 'completed') {
          figures.items_failed++;
          continue;
        }
        const urls = task.result?.url ?? [];
        for (const [k, url] of urls.entries()) {
          figures.bytes_stored += await this.download(url, join(this.options.outDir, `${index}_${k}.png`));
          figures.images++;
        }
        figures.items_completed++;
      }
    };
    const started = performance.now();
    try {
      await Promise.all(Array.from({ length: this.options.concurrency }, worker));
      figures.finished = true;
    } catch (error) {
      if (!(error instanceof DeadlinePassed)) throw error;
    }
    figures.wall_s = Math.round((performance.now() - started) / 10) / 100;
    return figures;
  }
}

function parseOptions(): NaiveOptions {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      items: { type: 'string' },
      concurrency: { type: 'string', default: '8' },
      rps: { type: 'string' },
      out: { type: 'string', default: 'naive-out' },
      deadline: { type: 'string' },
    },
  });
  const apiKey = process.env.PIXELMILL_API_KEY;
  if (!values.url || !values.items || !apiKey)
    throw new Error(
      'usage: naive.js --url URL --items N [--concurrency C] [--rps R] (key in PIXELMILL_API_KEY)',
    );
  return {
    url: values.url.replace(/\/+$/, ''),
    apiKey,
    items: Number(values.items),
    concurrency: Number(values.concurrency),
    ...(values.rps ? { rps: Number(values.rps) } : {}),
    outDir: values.out,
    deadline: values.deadline ? Number(values.deadline) : Number.POSITIVE_INFINITY,
  };
}

async function main(): Promise<void> {
  const client = new NaiveClient(parseOptions());
  try {
    process.stdout.write(`${JSON.stringify(await client.run())}\n`);
  } finally {
    await client.close();
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`naive: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
