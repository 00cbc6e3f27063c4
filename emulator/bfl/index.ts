// Public entry of the Black Forest Labs (FLUX API) emulator: `startBflEmulator` serves BFL's API
// as its documentation describes it (POST /v1/{model}, GET /v1/get_result, signed sample URLs
// that expire, 24 active tasks per account, webhooks) with fault injection, on core's generation
// simulator. docs/emulators/bfl.md documents every knob and the sources read.
import { systemClock, type Clock } from '../core/clock.js';
import { closerFor, listen, type RunningProviderEmulator } from '../core/index.js';
import {
  parseBflConfig,
  type BflConfig,
  type BflConfigOverrides,
  type BflLimits,
  type LimitsChange,
} from './config.js';
import { createContext } from './context.js';
import { fireWebhook } from './results.js';
import { changeLimits, collectStats, type BflEmulatorStats } from './routes/admin.js';
import { track } from './routes/submit.js';
import { createBflServer } from './server.js';
import { UserError } from '../../common/errors.js';
import { plural } from '../../common/words.js';

export {
  DEFAULT_BFL_CONFIG,
  DEMO_BFL_KEY,
  loadBflConfig,
  parseBflConfig,
  parseBflConfigText,
} from './config.js';
export type { BflConfig, BflConfigOverrides, BflLimits, LimitsChange } from './config.js';
export type { BflEmulatorStats, GroundTruthTask } from './routes/admin.js';
export { BFL_MODELS, type BflModel } from './models.js';
export { SIGNATURE_HEADER, SECRET_HEADER } from './webhook-body.js';

export interface StartBflEmulatorOptions {
  /** Any subset of the config, deep-merged over the defaults (arrays replace); port 0 = any free port. */
  config?: BflConfigOverrides;
  /** Defaults to the system clock; tests pass a manual one to move time without sleeping. */
  clock?: Clock;
  /** Where unexpected internal errors are reported; defaults to stderr. */
  log?: (line: string) => void;
}

export interface RunningBflEmulator extends RunningProviderEmulator<BflConfig, BflEmulatorStats> {
  readonly provider: 'bfl';
  /** The base URL written into polling_url (differs from `url` when polling_host is set). */
  readonly pollingBaseUrl: string;
  /** The limits in force (GET /_emulator/limits). */
  limits(): BflLimits;
  /** Changes the limits as PUT /_emulator/limits does; throws, changing nothing, when invalid. */
  setLimits(change: LimitsChange): BflLimits;
}

export class BflLimitsError extends UserError {
  override name = 'BflLimitsError';
}

export async function startBflEmulator(options: StartBflEmulatorOptions = {}): Promise<RunningBflEmulator> {
  const config = parseBflConfig(options.config ?? {});
  const clock = options.clock ?? systemClock;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const ctx = createContext(config, clock, fireWebhook);

  const restoredAt = clock.now();
  const restored = ctx.jobs.restore((name, payload) => {
    if (name === 'fetched') {
      const { id, at } = payload as { id: string; at: number };
      const job = ctx.jobs.get(id);
      if (job && job.resultFetchedAt === undefined) job.resultFetchedAt = at;
    } else if (name === 'limits') {
      ctx.limits = payload as BflLimits;
    }
  });
  for (const job of restored) track(ctx, job, restoredAt);

  const server = createBflServer(ctx, log);
  const url = await listen(server, config.host, config.port, 'bfl');
  const port = new URL(url).port;
  const polling = config.polling_host === null ? url : `http://${config.polling_host}:${port}`;
  const delivery = config.delivery_host === null ? polling : `http://${config.delivery_host}:${port}`;
  ctx.urls = { base: url, polling, delivery };

  return {
    provider: 'bfl',
    url,
    pollingBaseUrl: polling,
    config,
    stats: () => collectStats(ctx),
    limits: () => ctx.limits,
    setLimits: (change) => {
      const { limits, problems } = changeLimits(ctx, change);
      if (problems.length === 0) return limits;
      throw new BflLimitsError(
        'bfl_emulator_limits_invalid',
        `invalid BFL emulator limits (${plural(problems.length, 'problem')})`,
        problems,
      );
    },
    close: closerFor(
      server,
      () => ctx.endTimers.close(),
      () => ctx.webhooks.close(),
    ),
  };
}
