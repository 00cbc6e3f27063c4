// Public entry of the Replicate emulator: an implementation of Replicate's predictions HTTP API,
// faithful to its documentation, with fault injection, for tests, benchmarks and offline runs.
// Start one with `startReplicateEmulator`; read a YAML config with `loadReplicateConfig`.
// docs/emulators/replicate.md documents the routes, every config knob and the sources.
import { closerFor, listen, systemClock, type Clock, type RunningProviderEmulator } from '../core/index.js';
import { parseReplicateConfig, type ReplicateConfig, type ReplicateConfigOverrides } from './config.js';
import { createContext } from './context.js';
import { DELIVERY_PATH, webpImages } from './routes/delivery.js';
import { createReplicateServer } from './server.js';
import { collectStats, type ReplicateStats } from './stats.js';

export {
  DEFAULT_REPLICATE_CONFIG,
  DEMO_REPLICATE_TOKEN,
  DEMO_WEBHOOK_SECRET,
  loadReplicateConfig,
  parseReplicateConfig,
  parseReplicateConfigText,
} from './config.js';
export type { ReplicateConfig, ReplicateConfigOverrides } from './config.js';
export type { GroundTruthPrediction, ReplicateStats } from './stats.js';
export type { PredictionJson, PredictionPage, PredictionStatus } from './wire.js';

export interface StartReplicateEmulatorOptions {
  /** Any subset of the config, deep-merged over the defaults (arrays replace); port 0 = a free port. */
  config?: ReplicateConfigOverrides;
  /** Defaults to the system clock; tests pass a manual one to move time without sleeping. */
  clock?: Clock;
  /** Where unexpected internal errors are reported; defaults to stderr. */
  log?: (line: string) => void;
}

export interface RunningReplicateEmulator extends RunningProviderEmulator<ReplicateConfig, ReplicateStats> {
  readonly provider: 'replicate';
  /** Where output files are served from (delivery_base_url, or `{url}/delivery`). */
  readonly deliveryUrl: string;
}

/** Rendered WebP files kept encoded (besides core's cache of PNG and JPEG). */
const WEBP_CACHE_BYTES = 128 * 1024 * 1024;

export async function startReplicateEmulator(
  options: StartReplicateEmulatorOptions = {},
): Promise<RunningReplicateEmulator> {
  const config = parseReplicateConfig(options.config ?? {});
  const clock = options.clock ?? systemClock;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const ctx = createContext(config, clock, log);
  // A restarted emulator knows every prediction it created before it serves; webhooks that fell due
  // while it was down are lost, as a receiver that was down would lose them.
  const now = clock.now();
  for (const job of ctx.store.restore()) if (!job.hasEndedAt(now)) ctx.webhooks.watch(job, false);
  const server = createReplicateServer(ctx, webpImages(WEBP_CACHE_BYTES));
  const url = await listen(server, config.host, config.port, 'replicate');
  ctx.view.apiBaseUrl = config.base_url ?? url;
  ctx.view.deliveryBaseUrl = config.delivery_base_url ?? `${url}${DELIVERY_PATH.slice(0, -1)}`;
  return {
    provider: 'replicate',
    url,
    deliveryUrl: ctx.view.deliveryBaseUrl,
    config,
    stats: () => collectStats(ctx),
    close: closerFor(
      server,
      () => ctx.waits.close(),
      () => ctx.webhooks.close(),
    ),
  };
}
