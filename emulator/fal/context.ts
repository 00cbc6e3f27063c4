// The parts of one running fal emulator, handed to every route: config, clock, the job simulator,
// keys, counters, the webhook signer and sender, the image cache, per-concern random streams, and
// the ground truth the simulator cannot derive (what clients fetched and downloaded).
import type { ServerResponse } from 'node:http';
import type { Clock } from '../core/clock.js';
import { ImageCache } from '../core/images/render.js';
import type { Job } from '../core/job.js';
import { JobSimulator } from '../core/jobs.js';
import { randomStream, type Random } from '../core/random-streams.js';
import { CoreStats, ServerFaults } from '../core/stats.js';
import { JobEndTimers, WebhookDispatcher } from '../core/webhooks.js';
import type { FalConfig } from './config.js';
import type { FalJobData } from './job-data.js';
import { WebhookSigner } from './signing.js';

/** Result images kept encoded: repeated downloads of thousands of images stay cheap. */
const IMAGE_CACHE_BYTES = 256 * 1024 * 1024;

export type RequestClass = keyof FalConfig['faults']['server_error_rates'];

export interface FalKey {
  account: string;
  userId: string;
  status: 'active' | 'disabled';
}

export interface FalContext {
  readonly config: FalConfig;
  readonly clock: Clock;
  readonly sim: JobSimulator<FalJobData>;
  readonly keys: ReadonlyMap<string, FalKey>;
  readonly userIds: ReadonlyMap<string, string>;
  readonly stats: CoreStats;
  readonly faults: ServerFaults<RequestClass>;
  readonly images: ImageCache;
  readonly signer: WebhookSigner;
  readonly webhooks: WebhookDispatcher;
  readonly endTimers: JobEndTimers<Job<FalJobData>>;
  readonly random: { ids: Random; extras: Random; downloads: Random; submits: Random };
  /** For each request with images, which were downloaded whole at least once. */
  readonly downloaded: Map<string, boolean[]>;
  /** Open status streams, ended on close. */
  readonly streams: Set<ServerResponse>;
  /** Base URL written into answers: public_url, or the emulator's own URL once it listens. */
  base: string;
}

export function createContext(
  config: FalConfig,
  clock: Clock,
  onWebhookDue: (ctx: FalContext, job: Job<FalJobData>) => void,
): FalContext {
  const stream = (index: number): Random => randomStream(config.seed, index);
  const keys = new Map<string, FalKey>();
  const userIds = new Map<string, string>();
  const byAccount: Record<string, number> = {};
  for (const account of config.accounts) {
    const userId = account.user_id ?? account.id;
    userIds.set(account.id, userId);
    if (account.concurrency !== null) byAccount[account.id] = account.concurrency;
    for (const key of account.keys) keys.set(key.key, { account: account.id, userId, status: key.status });
  }
  const stats = new CoreStats();
  const sim = new JobSimulator<FalJobData>({
    clock,
    timeScale: config.time_scale,
    random: stream(0),
    concurrency: config.concurrency,
    concurrencyByAccount: byAccount,
    journalFile: config.state_file,
  });
  const ctx: FalContext = {
    config,
    clock,
    sim,
    keys,
    userIds,
    stats,
    faults: new ServerFaults<RequestClass>(stream(3), () => config.faults.server_error_rates),
    images: new ImageCache(IMAGE_CACHE_BYTES),
    signer: new WebhookSigner(config.seed, config.webhooks.signing_keys, config.webhooks.rotated),
    webhooks: new WebhookDispatcher({
      clock,
      timeScale: config.time_scale,
      retryDelaysSeconds: config.webhooks.retry_delays_seconds,
      attemptTimeoutSeconds: config.webhooks.attempt_timeout_seconds,
      retryOn: 'any_failure',
      duplicateRate: config.faults.webhook_duplicate_rate,
      lostRate: config.faults.webhook_lost_rate,
      random: stream(5),
      onAttempt: (attempt) => {
        stats.webhook(attempt.outcome);
        // A delivered payload is the result in the client's hands, as a fetch of it would be.
        const job = attempt.outcome === 'delivered' ? sim.get(attempt.jobId) : undefined;
        if (job && !job.data.webhookPayloadError) job.resultFetchedAt ??= clock.now();
      },
    }),
    endTimers: new JobEndTimers<Job<FalJobData>>(clock, (job) => onWebhookDue(ctx, job)),
    random: { ids: stream(1), extras: stream(2), downloads: stream(4), submits: stream(6) },
    downloaded: new Map(),
    streams: new Set(),
    base: config.public_url?.replace(/\/+$/, '') ?? '',
  };
  sim.onReschedule = (jobs) => ctx.endTimers.rearm(jobs);
  return ctx;
}
