// How the two hand-written baselines (naive.ts, script.ts) talk to the API, as a script would:
// undici, each call repeated while the answer is 429 (after Retry-After) or 5xx (after 1 s), and
// with --rps R each endpoint group (submits; task GETs and batch lookups) paced at R calls/s, a
// token bucket of burst 1 per group, as the emulator counts them. Each baseline runs in its own
// process so that its peak RSS and CPU are measured like pixelmill's.
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Agent, request, type Dispatcher } from 'undici';
import { benchPrompt } from './catalog-files.js';

const SERVER_ERROR_WAIT_MS = 1_000;

export interface BaselineFigures {
  finished: boolean;
  wall_s: number;
  items_completed: number;
  items_failed: number;
  images: number;
  bytes_stored: number;
  /** --checks: images decoded, thumbnailed and checked; those a check found something in. */
  images_checked: number;
  images_flagged: number;
}

export interface BaselineOptions {
  url: string;
  apiKey: string;
  items: number;
  concurrency: number;
  /** Calls per second of each endpoint group; undefined: no pacing (429s are waited out). */
  rps?: number;
  outDir: string;
  /** Decode, thumbnail and check each stored image, as pixelmill does (script.ts only). */
  checks: boolean;
  deadline: number;
}

/** What every baseline submit asks for besides its prompt. */
export const BENCH_REQUEST = { size: '1:1', resolution: '1K' } as const;

export class DeadlinePassed extends Error {
  override name = 'DeadlinePassed';
}

export interface TaskView {
  status: string;
  result?: { url: string[] };
}

export interface LookupAnswer {
  id: string;
  status: string;
}

/** Spaces calls 1/rate s apart: a token bucket of burst 1, shared by every caller. */
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

export class BaselineApi {
  private readonly dispatcher: Dispatcher;
  private readonly pacers: { submit: Pacer; query: Pacer } | undefined;

  constructor(private readonly options: BaselineOptions) {
    this.dispatcher = new Agent({ connections: options.concurrency * 2, keepAliveTimeout: 30_000 });
    this.pacers = options.rps ? { submit: new Pacer(options.rps), query: new Pacer(options.rps) } : undefined;
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  private async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const pacer = path.startsWith('/v1/images/') ? this.pacers?.submit : this.pacers?.query;
    for (;;) {
      if (Date.now() > this.options.deadline) throw new DeadlinePassed('deadline passed');
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

  /** Submits the catalog's item `index` (the prompts pixelmill's bench manifests use); its task id. */
  async submit(index: number): Promise<string> {
    const ack = (await this.call('POST', '/v1/images/generations', {
      prompt: benchPrompt(index),
      ...BENCH_REQUEST,
    })) as { data: { task_id: string }[] };
    return ack.data[0]!.task_id;
  }

  async task(taskId: string): Promise<TaskView> {
    return ((await this.call('GET', `/v1/tasks/${taskId}`)) as { data: TaskView }).data;
  }

  /** One batch lookup (at most 500 ids, the spec's limit). */
  async lookup(taskIds: string[]): Promise<LookupAnswer[]> {
    return ((await this.call('POST', '/v1/tasks/batch', { task_ids: taskIds })) as { data: LookupAnswer[] })
      .data;
  }

  /** Streams one image to `file`; its size in bytes. */
  async download(url: string, file: string): Promise<number> {
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
}

export function emptyFigures(): BaselineFigures {
  return {
    finished: false,
    wall_s: 0,
    items_completed: 0,
    items_failed: 0,
    images: 0,
    bytes_stored: 0,
    images_checked: 0,
    images_flagged: 0,
  };
}

/** Runs `work`; the figures are finished unless the deadline stopped it, and timed. */
export async function timed(figures: BaselineFigures, work: () => Promise<void>): Promise<BaselineFigures> {
  const started = performance.now();
  try {
    await work();
    figures.finished = true;
  } catch (error) {
    if (!(error instanceof DeadlinePassed)) throw error;
  }
  figures.wall_s = Math.round((performance.now() - started) / 10) / 100;
  return figures;
}

/** The command line both baselines take; the API key comes from PIXELMILL_API_KEY. */
export function parseBaselineOptions(name: string, defaultConcurrency: number): BaselineOptions {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      items: { type: 'string' },
      concurrency: { type: 'string', default: String(defaultConcurrency) },
      rps: { type: 'string' },
      out: { type: 'string', default: `${name}-out` },
      checks: { type: 'boolean', default: false },
      deadline: { type: 'string' },
    },
  });
  const apiKey = process.env.PIXELMILL_API_KEY;
  if (!values.url || !values.items || !apiKey)
    throw new Error(
      `usage: ${name}.js --url URL --items N [--concurrency C] [--rps R] (key in PIXELMILL_API_KEY)`,
    );
  return {
    url: values.url.replace(/\/+$/, ''),
    apiKey,
    items: Number(values.items),
    concurrency: Number(values.concurrency),
    ...(values.rps ? { rps: Number(values.rps) } : {}),
    outDir: values.out,
    checks: values.checks,
    deadline: values.deadline ? Number(values.deadline) : Number.POSITIVE_INFINITY,
  };
}

/** A baseline's process: prints its figures as one JSON line, or its error on stderr (exit 1). */
export async function runBaseline(
  name: string,
  defaultConcurrency: number,
  run: (api: BaselineApi, options: BaselineOptions) => Promise<BaselineFigures>,
): Promise<void> {
  try {
    const options = parseBaselineOptions(name, defaultConcurrency);
    const api = new BaselineApi(options);
    try {
      process.stdout.write(`${JSON.stringify(await run(api, options))}\n`);
    } finally {
      await api.close();
    }
  } catch (error) {
    process.stderr.write(`${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
