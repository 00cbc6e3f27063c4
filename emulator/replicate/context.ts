// The parts of one running Replicate emulator, handed to every route: config, clock, predictions,
// tokens, limits, counters, webhooks, held sync requests, images, and the seeded random streams.
//
// Each concern draws from its own stream of the one seed, so that, for example, the number of
// GETs (which draw server faults) never changes which predictions fail or how long they take.
import type { Clock } from '../core/clock.js';
import { CoreStats, ImageCache, randomStream, ServerFaults, type Random } from '../core/index.js';
import type { AccountConfig, ReplicateConfig, RequestClass } from './config.js';
import { RequestLimiter } from './limits.js';
import { PredictionStore } from './predictions.js';
import { SyncWaits } from './sync-wait.js';
import type { ViewContext } from './view.js';
import { PredictionWebhooks } from './webhooks.js';

/** Rendered output files kept encoded: a file is downloaded, and retried, many times. */
const IMAGE_CACHE_BYTES = 256 * 1024 * 1024;

export interface TokenEntry {
  /** Position among all tokens of the config: the limiter's key, and what logs may name. */
  index: number;
  account: AccountConfig;
}

export interface ReplicateContext {
  readonly config: ReplicateConfig;
  readonly clock: Clock;
  readonly store: PredictionStore;
  readonly limiter: RequestLimiter;
  readonly stats: CoreStats;
  readonly serverFaults: ServerFaults<RequestClass>;
  readonly webhooks: PredictionWebhooks;
  readonly waits: SyncWaits;
  readonly images: ImageCache;
  readonly tokens: ReadonlyMap<string, TokenEntry>;
  readonly accounts: ReadonlyMap<string, AccountConfig>;
  /** Lost create responses and download faults. */
  readonly faultRandom: Random;
  /** Known once the server listens (port 0 is resolved then). */
  view: ViewContext;
  log: (line: string) => void;
}

export function createContext(
  config: ReplicateConfig,
  clock: Clock,
  log: (line: string) => void,
): ReplicateContext {
  const stream = (index: number): Random => randomStream(config.seed, index);
  const stats = new CoreStats();
  const store = new PredictionStore({
    config,
    clock,
    timingRandom: stream(0),
    idRandom: stream(1),
    outcomeRandom: stream(2),
  });
  const tokens = new Map<string, TokenEntry>();
  const accounts = new Map<string, AccountConfig>();
  for (const account of config.accounts) {
    accounts.set(account.username, account);
    for (const token of account.tokens) tokens.set(token, { index: tokens.size, account });
  }
  const context: ReplicateContext = {
    config,
    clock,
    store,
    limiter: new RequestLimiter(config.limits),
    stats,
    serverFaults: new ServerFaults<RequestClass>(stream(3), () => config.faults.server_error_rate),
    webhooks: new PredictionWebhooks({
      config,
      clock,
      view: () => context.view,
      secretOf: (username) => accounts.get(username)?.webhook_secret ?? '',
      faultRandom: stream(4),
      idRandom: stream(5),
      stats,
    }),
    waits: new SyncWaits(clock),
    images: new ImageCache(IMAGE_CACHE_BYTES),
    tokens,
    accounts,
    faultRandom: stream(6),
    view: {
      store,
      apiBaseUrl: '',
      deliveryBaseUrl: '',
      includeOutputInList: config.list.include_output,
      includeLogsInList: config.list.include_logs,
      timeScale: config.time_scale,
    },
    log,
  };
  store.jobs.onReschedule = (jobs) => {
    context.webhooks.rearm(jobs);
    context.waits.rearm(jobs);
  };
  return context;
}
