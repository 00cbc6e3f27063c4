// The parts of one running OpenAI emulator, handed to every route: the config in force (a PUT of
// /_emulator/config replaces it), clock, keys, uploaded files, batches, images, the per-minute
// limiter, counters, injected faults, the journal, and the seeded random streams (one per concern,
// so that, say, the number of polls never changes which requests fail).
import type { Clock } from '../core/clock.js';
import { CoreStats, EventJournal, randomStream, ServerFaults, type Random } from '../core/index.js';
import { OpenAIKeyRing } from './auth.js';
import { endOf, type BatchRecord } from './batches.js';
import type { OpenAIConfig } from './config.js';
import { UploadStore, type BatchFile } from './files.js';
import { ImageSource } from './images.js';
import { BatchFileContent } from './output-file.js';
import { ImageRateLimiter } from './rate-limit.js';

export type RequestClass = keyof OpenAIConfig['faults']['server_error_rate'];

export interface OpenAIContext {
  config: OpenAIConfig;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly keys: OpenAIKeyRing;
  readonly uploads: UploadStore;
  /** By id, in creation order. */
  readonly batches: Map<string, BatchRecord>;
  /** Output and error files by id, whether their batch has ended yet or not. */
  readonly batchFiles: Map<string, { batch: BatchRecord; kind: 'output' | 'error' }>;
  readonly contents: Map<string, BatchFileContent>;
  readonly images: ImageSource;
  readonly limiter: ImageRateLimiter;
  readonly stats: CoreStats;
  readonly serverFaults: ServerFaults<RequestClass>;
  readonly journal: EventJournal | undefined;
  readonly random: {
    readonly ids: Random;
    readonly create429: Random;
    readonly sync: Random;
  };
  readonly served: {
    lines: number;
    bytes: number;
    ranges: number;
    /** Files whose first download was cut (cut_output_mode once_per_file). */
    cutFiles: Set<string>;
  };
}

export function createContext(
  config: OpenAIConfig,
  clock: Clock,
  log: (line: string) => void,
): OpenAIContext {
  const stream = (index: number): Random => randomStream(config.seed, index);
  const ctx: OpenAIContext = {
    config,
    clock,
    log,
    keys: new OpenAIKeyRing(config.accounts),
    uploads: new UploadStore(config.state_file),
    batches: new Map(),
    batchFiles: new Map(),
    contents: new Map(),
    images: new ImageSource(() => ctx.config.images),
    limiter: new ImageRateLimiter(() => ctx.config.limits),
    stats: new CoreStats(),
    serverFaults: new ServerFaults<RequestClass>(stream(3), () => ctx.config.faults.server_error_rate),
    journal: config.state_file === null ? undefined : new EventJournal(config.state_file),
    random: { ids: stream(1), create429: stream(2), sync: stream(4) },
    served: { lines: 0, bytes: 0, ranges: 0, cutFiles: new Set() },
  };
  return ctx;
}

/** The output or error file `id` of `account`, if its batch has ended with one (and it is not deleted). */
export function batchFileOf(ctx: OpenAIContext, id: string, account: string): BatchFile | undefined {
  const entry = ctx.batchFiles.get(id);
  if (!entry || entry.batch.account !== account || ctx.uploads.isDeleted(id)) return undefined;
  const { batch, kind } = entry;
  if (!batchFileExists(batch, kind, ctx.clock.now())) return undefined;
  return {
    kind,
    id,
    account,
    batchId: batch.id,
    filename: `batch_${batch.id}_${kind}.jsonl`,
    createdAt: endOf(batch).at,
  };
}

/** Which files an ended batch has; kept, since an ended batch cannot change (no cancel after its end). */
const filesOfEnded = new WeakMap<BatchRecord, { output: boolean; error: boolean }>();

/** Whether the batch has ended with an output (any success ran) or error file (anything else). */
export function batchFileExists(batch: BatchRecord, kind: 'output' | 'error', now: number): boolean {
  const end = endOf(batch);
  if (end.status === 'failed' || now < end.at) return false;
  let files = filesOfEnded.get(batch);
  if (!files) {
    const successes = batch.requests.some((r) => r.ok && r.finishAt <= end.cutoff);
    const others = batch.requests.some((r) => !(r.ok && r.finishAt <= end.cutoff));
    filesOfEnded.set(batch, (files = { output: successes, error: others }));
  }
  return files[kind];
}

/** The generator of a batch file's content (kept: it knows its line offsets once counted). */
export function contentOf(ctx: OpenAIContext, file: BatchFile): BatchFileContent {
  let content = ctx.contents.get(file.id);
  if (!content) {
    content = new BatchFileContent(file, ctx.batches.get(file.batchId)!, ctx.images, ctx.config.seed);
    ctx.contents.set(file.id, content);
  }
  return content;
}
