// The parts of one running emulator, handed to every route handler: config, clock, tasks, keys,
// limits, counters and the per-concern random streams.
//
// Each concern draws from its own seeded stream so that, for example, the number of GET requests
// (which draw server faults) does not change which tasks fail or how long they take.
import type { Language } from './wire.js';
import { KeyRing, type ApiKey } from './auth.js';
import type { ParsedBody } from './body.js';
import type { Clock } from '../core/clock.js';
import type { EmulatorConfig } from './config.js';
import { RenderedImageCache } from './images/render.js';
import { ReferenceFetcher } from './references.js';
import { seededRandom, type Random } from '../core/random.js';
import { RateLimiter } from './rate-limit.js';
import { RequestStats } from './stats.js';
import { TaskJournal } from './journal.js';
import { TaskStore } from './store.js';
import { TerminalNotifier } from './terminal-notifier.js';

/** Result PNGs kept encoded, so repeated downloads of 1,000s of images stay cheap. */
const IMAGE_CACHE_BYTES = 256 * 1024 * 1024;

export interface EmulatorContext {
  readonly config: EmulatorConfig;
  readonly clock: Clock;
  readonly keys: KeyRing;
  readonly limiter: RateLimiter;
  readonly store: TaskStore;
  readonly stats: RequestStats;
  readonly images: RenderedImageCache;
  readonly references: ReferenceFetcher;
  readonly notifier: TerminalNotifier;
  readonly faultRandom: Random;
  readonly downloadRandom: Random;
  readonly malformedRandom: Random;
  /** Known once the server listens (port 0 is resolved then). */
  resultBaseUrl: string;
}

/** What a route handler answers on success; failures are thrown as EmulatorApiError. */
export interface ApiReply {
  status: number;
  body: unknown;
}

/** One API call after routing and authentication. */
export interface ApiCall {
  readonly key: ApiKey;
  /** The language of this request's error texts: as asked if supported, else en. */
  readonly language: Language;
  /** Whether the request named a language at all (a query's unsupported one counts). */
  readonly languageGiven: boolean;
  /** The `{id}` path segment, for routes that have one. */
  readonly pathParam: string;
  /** The parsed JSON body, for routes that read one. */
  readonly body: ParsedBody;
  /** The Idempotency-Key header, as sent. */
  readonly idempotencyKey?: string | undefined;
}

export function createContext(config: EmulatorConfig, clock: Clock): EmulatorContext {
  const keys = new KeyRing(config.accounts);
  // Streams derived from the one seed; the offsets only need to differ.
  const stream = (offset: number): Random => seededRandom((config.seed + offset * 0x9e3779b1) | 0);
  const stats = new RequestStats((index) => keys.keys[index]?.label);
  const journal = config.state_file ? new TaskJournal(config.state_file) : undefined;
  const store = new TaskStore(config, clock, stream(0), stream(1), journal);
  const context: EmulatorContext = {
    config,
    clock,
    keys,
    limiter: new RateLimiter(keys.keys.length, config.rate_limits, clock),
    store,
    stats,
    images: new RenderedImageCache(IMAGE_CACHE_BYTES),
    references: new ReferenceFetcher(config.reference_images),
    notifier: new TerminalNotifier({
      config,
      clock,
      store,
      random: stream(2),
      resultBaseUrl: () => context.resultBaseUrl,
      onOutcome: (outcome, duplicate) => {
        stats.recordWebhook(outcome);
        if (duplicate) stats.recordFault('webhook_duplicate');
      },
    }),
    faultRandom: stream(3),
    downloadRandom: stream(4),
    malformedRandom: stream(5),
    resultBaseUrl: '',
  };
  if (journal) {
    const accounts = new Map(keys.keys.map((key) => [key.account.id, key.account]));
    const now = clock.now();
    for (const record of journal.load(accounts)) {
      store.add(record);
      // Webhooks still to come are armed again; those due while the emulator was down are lost,
      // as a receiver that was down would lose them (polling is the safety net).
      if (record.endsAt > now) context.notifier.schedule(record);
    }
  }
  return context;
}
