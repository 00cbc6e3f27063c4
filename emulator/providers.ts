// Every provider's emulator by its name: how to start one, its demo key, and how to read its YAML
// config. `pixelmill emulator --provider` and the embedded run (a manifest naming a provider and no
// base URL) start them from here; each stays in its own folder, written from its provider's docs.
import { startBflEmulator, DEMO_BFL_KEY, loadBflConfig } from './bfl/index.js';
import type { Clock } from './core/clock.js';
import { DEMO_API_KEY, loadEmulatorConfig, startEmulator } from './apimart/index.js';
import { DEMO_FAL_KEY, JWKS_PATH, loadFalConfig, startFalEmulator } from './fal/index.js';
import { DEMO_OPENAI_KEY, loadOpenAIConfig, startOpenAIEmulator } from './openai/index.js';
import { DEMO_REPLICATE_TOKEN, loadReplicateConfig, startReplicateEmulator } from './replicate/index.js';

export const EMULATED_PROVIDERS = ['apimart', 'fal', 'replicate', 'bfl', 'openai'] as const;
export type EmulatedProvider = (typeof EMULATED_PROVIDERS)[number];

/** What every emulator offers its starter. */
export interface StartedEmulator {
  readonly url: string;
  readonly config: unknown;
  stats(): object;
  close(): Promise<void>;
}

export interface EmulatorStart {
  /** Any subset of the provider's config, merged over its defaults. */
  config?: Record<string, unknown>;
  clock?: Clock;
  log?: (line: string) => void;
}

interface EmulatorEntry {
  /** The key every default config accepts: printed, since it is public. */
  demoKey: string;
  start(options: EmulatorStart): Promise<StartedEmulator>;
  /** A YAML config file, checked whole (every problem at file:line:col). */
  load(file: string): object;
  /** Where a running emulator at `url` publishes its webhook signing keys (fal's JWKS). */
  jwksUrl?(url: string): string;
  /** The embedded run's time_scale, where the default (client/embedded.ts) leaves its demo too slow. */
  embeddedTimeScale?: number;
}

const EMULATORS: Record<EmulatedProvider, EmulatorEntry> = {
  apimart: {
    demoKey: DEMO_API_KEY,
    start: (options) => startEmulator(options as never),
    load: loadEmulatorConfig,
  },
  fal: {
    demoKey: DEMO_FAL_KEY,
    start: (options) => startFalEmulator(options as never),
    load: loadFalConfig,
    jwksUrl: (url) => `${url}${JWKS_PATH}`,
  },
  replicate: {
    demoKey: DEMO_REPLICATE_TOKEN,
    start: (options) => startReplicateEmulator(options as never),
    load: loadReplicateConfig,
  },
  bfl: { demoKey: DEMO_BFL_KEY, start: (options) => startBflEmulator(options as never), load: loadBflConfig },
  openai: {
    demoKey: DEMO_OPENAI_KEY,
    start: (options) => startOpenAIEmulator(options as never),
    load: loadOpenAIConfig,
    // A batch runs 10-60 minutes by default: at 0.003 it is 2-11 s, so that a demo batch of 20
    // items ends well within a minute (sync calls of 10-40 s answer in a tenth of a second).
    embeddedTimeScale: 0.003,
  },
};

export function isEmulatedProvider(name: string): name is EmulatedProvider {
  return (EMULATED_PROVIDERS as readonly string[]).includes(name);
}

export function emulatorOf(provider: EmulatedProvider): EmulatorEntry {
  return EMULATORS[provider];
}
