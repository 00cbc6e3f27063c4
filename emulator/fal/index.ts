// Public entry of the fal emulator: fal's queue API (queue.fal.run) written from fal's
// documentation, with fault injection, for tests, benchmarks and offline rehearsals. Start one
// with `startFalEmulator`; read a YAML config with `loadFalConfig`. docs/emulators/fal.md
// documents the routes, every config knob and the facts that are not confirmed.
import { systemClock, type Clock } from '../core/clock.js';
import type { Job } from '../core/job.js';
import { closerFor, listen, type RunningProviderEmulator } from '../core/server.js';
import { parseFalConfig, type FalConfig, type FalConfigOverrides } from './config.js';
import { createContext, type FalContext } from './context.js';
import type { FalJobData } from './job-data.js';
import { collectStats, type FalEmulatorStats } from './routes/admin.js';
import { createFalServer } from './server.js';
import { sendWebhook } from './webhook.js';

export {
  DEFAULT_FAL_CONFIG,
  DEMO_FAL_KEY,
  loadFalConfig,
  parseFalConfig,
  parseFalConfigText,
} from './config.js';
export type { FalConfig, FalConfigOverrides } from './config.js';
export type { FalEmulatorStats } from './routes/admin.js';
export { JWKS_PATH } from './signing.js';
export type { RunningProviderEmulator } from '../core/server.js';

export interface StartFalEmulatorOptions {
  /** Any subset of the config, deep-merged over the defaults (arrays replace); port 0 = any free port. */
  config?: FalConfigOverrides;
  /** Defaults to the system clock; tests pass a manual one to move time without sleeping. */
  clock?: Clock;
  /** Where unexpected internal errors are reported; defaults to stderr. */
  log?: (line: string) => void;
}

export interface RunningFalEmulator extends RunningProviderEmulator<FalConfig, FalEmulatorStats> {
  readonly provider: 'fal';
  /** The JWKS URL clients verify webhook signatures with (`{url}/.well-known/jwks.json`). */
  readonly jwksUrl: string;
}

export async function startFalEmulator(options: StartFalEmulatorOptions = {}): Promise<RunningFalEmulator> {
  const config = parseFalConfig(options.config ?? {});
  const clock = options.clock ?? systemClock;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const ctx = createContext(config, clock, sendWebhook);
  restore(ctx);
  const server = createFalServer(ctx, log);
  const url = await listen(server, config.host, config.port, 'fal');
  // public_url, else the emulator's own URL (port 0 is resolved only now).
  ctx.base ||= url;
  const close = closerFor(
    server,
    () => ctx.endTimers.close(),
    () => {
      for (const stream of ctx.streams) stream.end();
    },
    () => ctx.webhooks.close(),
  );
  return {
    provider: 'fal',
    url,
    jwksUrl: `${ctx.base}/.well-known/jwks.json`,
    config,
    stats: () => collectStats(ctx),
    close,
  };
}

/** Replays the state_file, if any: jobs, cancels and limits, key rotations; webhooks still due are armed again. */
function restore(ctx: FalContext): void {
  const restored: Job<FalJobData>[] = ctx.sim.restore((name) => {
    if (name === 'webhook_key_rotated') ctx.signer.rotate();
  });
  const now = ctx.clock.now();
  // Webhooks due while the emulator was down are lost, as a receiver that was down would lose them.
  for (const job of restored)
    if (job.record.webhook !== null && !job.hasEndedAt(now)) ctx.endTimers.watch(job);
}
