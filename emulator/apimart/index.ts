// Public entry of the first API's emulator (`apimart`, re-exported by emulator/index.ts): a
// faithful, configurable implementation of the async image API for tests, benchmarks and offline
// rehearsals. Start one with `startEmulator`; read a YAML config with `loadEmulatorConfig`.
// docs/emulator.md documents the config and every error code.
import { UserError } from '../../common/errors.js';
import { plural } from '../../common/words.js';
import { systemClock, type Clock } from '../core/clock.js';
import { closerFor, listen } from '../core/server.js';
import {
  parseEmulatorConfig,
  type EmulatorConfig,
  type EmulatorConfigOverrides,
  type RateLimitsChange,
} from './config.js';
import { createContext } from './context.js';
import type { RateLimits } from './rate-limit.js';
import { changeRateLimits, collectStats, type EmulatorStats } from './routes/admin.js';
import { createEmulatorServer } from './server.js';
import type { InjectedFault } from './stats.js';

export {
  DEFAULT_EMULATOR_CONFIG,
  DEMO_API_KEY,
  loadEmulatorConfig,
  parseEmulatorConfig,
  parseEmulatorConfigText,
} from './config.js';
export type { EmulatorConfig, EmulatorConfigOverrides, RateLimitsChange } from './config.js';
export type { BucketConfig, RateLimits } from './rate-limit.js';
export type { EmulatorStats, GroundTruthTask } from './routes/admin.js';
export type { InjectedFault, RequestLogEntry } from './stats.js';
export type { Clock, Timer } from '../core/clock.js';

export interface StartEmulatorOptions {
  /** Any subset of the config, deep-merged over the defaults (arrays replace); port 0 = any free port. */
  config?: EmulatorConfigOverrides;
  /** Defaults to the system clock; tests pass a manual one to move time without sleeping. */
  clock?: Clock;
  /** Where unexpected internal errors are reported; defaults to stderr. */
  log?: (line: string) => void;
}

export interface RunningEmulator {
  /** Base URL of the API, without a trailing slash, e.g. `http://127.0.0.1:8787`. */
  readonly url: string;
  /** The {result_host} prefix written into tasks (result_base_url, or `{url}/results`). */
  readonly resultBaseUrl: string;
  /** The config it started with; `rateLimits()` says the limits in force since. */
  readonly config: EmulatorConfig;
  stats(): EmulatorStats;
  /** The rate limits in force (what GET /_emulator/rate-limits answers). */
  rateLimits(): RateLimits;
  /**
   * Changes the rate limits for the next request, as PUT /_emulator/rate-limits does: fields left
   * out keep their value, `per_minute: null` removes the window. Returns the limits now in force;
   * throws EmulatorRateLimitsError, changing nothing, when the change is invalid.
   */
  setRateLimits(change: RateLimitsChange): RateLimits;
  /** How many of each fault it has injected so far (in-process only; not in /_emulator/stats). */
  injectedFaults(): Record<InjectedFault, number>;
  /** Stops listening, drops open connections and cancels pending webhooks. Idempotent. */
  close(): Promise<void>;
}

export class EmulatorListenError extends UserError {
  override name = 'EmulatorListenError';
}

export class EmulatorRateLimitsError extends UserError {
  override name = 'EmulatorRateLimitsError';
}

export async function startEmulator(options: StartEmulatorOptions = {}): Promise<RunningEmulator> {
  const config = parseEmulatorConfig(options.config ?? {});
  const clock = options.clock ?? systemClock;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const ctx = createContext(config, clock);
  const server = createEmulatorServer(ctx, log);

  const url = await listen(
    server,
    config.host,
    config.port,
    'apimart',
    (reason) =>
      new EmulatorListenError(
        'emulator_listen_failed',
        `emulator cannot listen on ${config.host}:${config.port}: ${reason}`,
      ),
  );
  ctx.resultBaseUrl = config.result_base_url ?? `${url}/results`;

  return {
    url,
    resultBaseUrl: ctx.resultBaseUrl,
    config,
    stats: () => collectStats(ctx),
    rateLimits: () => ctx.limiter.limits,
    setRateLimits: (change) => {
      const { limits, problems } = changeRateLimits(ctx, change);
      if (problems.length === 0) return limits;
      throw new EmulatorRateLimitsError(
        'emulator_rate_limits_invalid',
        `invalid rate limits (${plural(problems.length, 'problem')})`,
        problems,
      );
    },
    injectedFaults: () => ({ ...ctx.stats.injected }),
    close: closerFor(server, () => ctx.notifier.close()),
  };
}
