// Public entry of the OpenAI emulator: `startOpenAIEmulator` serves the Files, Batch and Images APIs
// as OpenAI's documentation describes them (JSONL batch input, batches that validate, run, finalize,
// expire or are cancelled, output and error files streamed in no order with Range support, the
// synchronous Images API with per-minute limits), with fault injection, for tests, benchmarks and
// offline runs. Written from the documentation, independent of pixelmill's client, so it checks it.
// docs/emulators/openai.md documents the routes, every knob and the sources read.
import { closerFor, listen, systemClock, type Clock } from '../core/index.js';
import { UserError } from '../../common/errors.js';
import { plural } from '../../common/words.js';
import {
  applyKnobsChange,
  parseOpenAIConfig,
  type KnobsChange,
  type OpenAIConfig,
  type OpenAIConfigOverrides,
} from './config.js';
import { createContext, type OpenAIContext } from './context.js';
import type { NewBatch } from './batches.js';
import type { UploadedFile } from './files.js';
import { changeKnobs, collectStats, type OpenAIEmulatorStats } from './routes/admin.js';
import { addBatch, applyCancel } from './routes/batches.js';
import { createOpenAIServer } from './server.js';
import { fileId, hex32 } from './ids.js';

export {
  DEFAULT_OPENAI_CONFIG,
  DEMO_OPENAI_KEY,
  loadOpenAIConfig,
  parseOpenAIConfig,
  parseOpenAIConfigText,
} from './config.js';
export type { KnobsChange, OpenAIConfig, OpenAIConfigOverrides } from './config.js';
export type { GroundTruthLine, OpenAIEmulatorStats } from './routes/admin.js';
export type { BatchStatus } from './batches.js';

export interface StartOpenAIEmulatorOptions {
  /** Any subset of the config, deep-merged over the defaults (arrays replace); port 0 = a free port. */
  config?: OpenAIConfigOverrides;
  /** Defaults to the system clock; tests pass a manual one to move time without sleeping. */
  clock?: Clock;
  /** Where unexpected internal errors are reported; defaults to stderr. */
  log?: (line: string) => void;
}

export interface RunningOpenAIEmulator {
  readonly provider: 'openai';
  /** Base URL without a trailing slash (the API is under `${url}/v1`). */
  readonly url: string;
  /** The config it started with (after defaults and validation). */
  readonly config: OpenAIConfig;
  /** What /_emulator/stats answers. */
  stats(): OpenAIEmulatorStats;
  /** The knobs in force (they start as `config`'s). */
  knobs(): OpenAIConfig;
  /** Changes knobs as PUT /_emulator/config does; throws, changing nothing, when invalid. */
  setKnobs(change: KnobsChange): OpenAIConfig;
  /** Stops listening and drops open connections (a streamed download among them). Idempotent. */
  close(): Promise<void>;
}

export class OpenAIKnobsError extends UserError {
  override name = 'OpenAIKnobsError';
}

export async function startOpenAIEmulator(
  options: StartOpenAIEmulatorOptions = {},
): Promise<RunningOpenAIEmulator> {
  const config = parseOpenAIConfig(options.config ?? {});
  const clock = options.clock ?? systemClock;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const ctx = createContext(config, clock, log);
  restore(ctx);
  const server = createOpenAIServer(ctx);
  const url = await listen(server, config.host, config.port, 'openai');
  return {
    provider: 'openai',
    url,
    config,
    stats: () => collectStats(ctx),
    knobs: () => ctx.config,
    setKnobs: (change) => {
      const { problems } = changeKnobs(ctx, change);
      if (problems.length === 0) return ctx.config;
      throw new OpenAIKnobsError(
        'openai_emulator_knobs_invalid',
        `invalid OpenAI emulator knobs (${plural(problems.length, 'problem')})`,
        problems,
      );
    },
    close: closerFor(server),
  };
}

/** Replays the journal: files, batches (drawn again from the same streams), cancels, knobs. */
function restore(ctx: OpenAIContext): void {
  if (!ctx.journal) return;
  for (const event of ctx.journal.load()) {
    if (event.kind !== 'custom') continue;
    const payload = event.payload as Record<string, unknown>;
    if (event.name === 'file') {
      ctx.uploads.restore(payload as unknown as Omit<UploadedFile, 'data' | 'kind'>);
      // Drawn again so that ids made after the restart do not repeat those made before it.
      fileId(ctx.random.ids);
    } else if (event.name === 'file_deleted') ctx.uploads.delete(payload.id as string);
    else if (event.name === 'knobs') {
      const { config } = applyKnobsChange(ctx.config, payload);
      if (config) ctx.config = config;
    } else if (event.name === 'batch') {
      const spec = payload as unknown as Omit<NewBatch, 'input'>;
      hex32(ctx.random.ids);
      const input = ctx.uploads.get(spec.inputFileId, spec.account);
      if (input) addBatch(ctx, spec, input.data);
    } else if (event.name === 'cancel') {
      const batch = ctx.batches.get(payload.id as string);
      if (batch) applyCancel(ctx, batch, event.at);
    }
  }
}
