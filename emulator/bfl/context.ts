// The parts of one running BFL emulator, handed to every route: config, clock, keys, the job
// simulator and the books beside it, counters, faults, images, webhooks, and the seeded random
// streams (one per concern, so that, say, the number of polls never changes which tasks fail).
import type { Clock } from '../core/clock.js';
import {
  CoreStats,
  ImageCache,
  JobEndTimers,
  JobSimulator,
  randomStream,
  ServerFaults,
  WebhookDispatcher,
  type Random,
} from '../core/index.js';
import { BflKeyRing } from './auth.js';
import type { BflConfig, BflLimits } from './config.js';
import { BFL_MODELS } from './models.js';
import { SampleSigner } from './sample-url.js';
import { ActiveTasks, CreditLedger, type BflJob, type BflTaskData } from './tasks.js';

export type RequestClass = 'submit' | 'get_result' | 'delivery' | 'credits';

/** Result images kept encoded, so repeated downloads stay cheap. */
const IMAGE_CACHE_BYTES = 256 * 1024 * 1024;

export interface BflContext {
  readonly config: BflConfig;
  readonly clock: Clock;
  readonly keys: BflKeyRing;
  readonly jobs: JobSimulator<BflTaskData>;
  readonly active: ActiveTasks;
  readonly ledger: CreditLedger;
  /** The limits in force (PUT /_emulator/limits changes them). */
  limits: BflLimits;
  readonly stats: CoreStats;
  readonly serverFaults: ServerFaults<RequestClass>;
  readonly signer: SampleSigner;
  readonly images: ImageCache;
  readonly webhooks: WebhookDispatcher;
  readonly endTimers: JobEndTimers<BflJob>;
  readonly random: {
    readonly ids: Random;
    /** Moderation draws and seeds of requests without one. */
    readonly draws: Random;
    readonly lostSubmit: Random;
    readonly downloads: Random;
  };
  /** Known once listening: the emulator's own base URL, and those written into answers. */
  urls: { base: string; polling: string; delivery: string };
  readonly samples: {
    /** With sample.resign_on_poll: the expiry of the latest URL handed out, per task. */
    lastExpiry: Map<string, number>;
    /** Delivery requests refused because their URL had expired. */
    refusedExpired: number;
    /** Complete downloads (HEAD and cut-off downloads not counted). */
    downloads: number;
    /** get_result requests under a host other than polling_host (polling_host_only). */
    pollsElsewhere: number;
    /** Numbers the delivery host's request ids. */
    deliveryRequests: number;
    /** WebP encodings of recent results, by task id. */
    webpCopies: Map<string, Promise<Buffer>>;
  };
}

export function initialLimits(config: BflConfig): BflLimits {
  const maxActive: BflLimits['max_active'] = {};
  for (const model of BFL_MODELS) {
    const limit = config.models[model].max_active;
    if (limit !== null) maxActive[model] = limit;
  }
  return {
    active_tasks: config.limits.active_tasks,
    scope: config.limits.scope,
    retry_after_seconds: config.limits.retry_after_seconds,
    max_active: maxActive,
  };
}

export function createContext(
  config: BflConfig,
  clock: Clock,
  fireWebhook: (ctx: BflContext, job: BflJob) => void,
): BflContext {
  const stream = (index: number): Random => randomStream(config.seed, index);
  const stats = new CoreStats();
  const ctx: BflContext = {
    config,
    clock,
    keys: new BflKeyRing(config.accounts),
    jobs: new JobSimulator<BflTaskData>({
      clock,
      timeScale: config.time_scale,
      random: stream(0),
      journalFile: config.state_file,
    }),
    active: new ActiveTasks(),
    ledger: new CreditLedger(config.accounts, config.billing.charge_errors),
    limits: initialLimits(config),
    stats,
    serverFaults: new ServerFaults<RequestClass>(stream(3), () => config.faults.server_error_rate),
    signer: new SampleSigner(config.seed),
    images: new ImageCache(IMAGE_CACHE_BYTES),
    webhooks: new WebhookDispatcher({
      clock,
      timeScale: config.time_scale,
      retryDelaysSeconds: config.webhooks.retry_seconds,
      attemptTimeoutSeconds: config.webhooks.timeout_seconds,
      // BFL's notes: "Respond with 2xx", and failed deliveries are retried.
      retryOn: 'any_failure',
      duplicateRate: config.faults.webhook_duplicate_rate,
      lostRate: config.faults.webhook_lost_rate,
      random: stream(5),
      onAttempt: (attempt) => stats.webhook(attempt.outcome),
    }),
    endTimers: new JobEndTimers<BflJob>(clock, (job) => fireWebhook(ctx, job)),
    random: { ids: stream(1), draws: stream(2), lostSubmit: stream(6), downloads: stream(4) },
    urls: { base: '', polling: '', delivery: '' },
    samples: {
      lastExpiry: new Map(),
      refusedExpired: 0,
      downloads: 0,
      pollsElsewhere: 0,
      deliveryRequests: 0,
      webpCopies: new Map(),
    },
  };
  return ctx;
}

/** The scope the active-task limit counts a key in. */
export function limitScope(ctx: BflContext, key: { account: string; label: string }): string {
  return ctx.limits.scope === 'key' ? `key:${key.label}` : `account:${key.account}`;
}
