// The embedded mode's in-process parts: pixelmill's workers and, when no API is configured, the
// emulator. The emulator keeps its port across invocations (in .pixelmill/emulator.json) so that
// result URLs handed out before a restart still resolve after it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createActivityRuntime } from '../activities/index.js';
import { ReferenceServer, referencePort } from '../references/server.js';
import { readJsonFile, writeJsonFile } from '../common/state-file.js';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_EMULATOR_CONFIG, type EmulatorConfigOverrides } from '../emulator/index.js';
import { emulatorOf, type EmulatedProvider, type StartedEmulator } from '../emulator/providers.js';
import { connectWorkerConnection, type TemporalEndpoint } from '../temporal/connection.js';
import type { TaskQueues } from '../common/names.js';
import { createPixelmillWorkers, type InFlightActivities } from '../worker/workers.js';

/**
 * Embedded runs compress the emulator's clock 10x by default: a 50 s generation takes 5 s. An
 * emulator may ask for more (emulator/providers.ts: OpenAI's batches last minutes even so).
 */
export const EMBEDDED_TIME_SCALE = 0.1;

let runtimeInstalled = false;
/** The SDK logs every worker state change; a CLI shows only errors unless --debug. */
export function quietTemporalLogs(debug: boolean): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    // No shutdown signals: the CLI handles Ctrl-C itself (client/interrupt.ts), so that it can
    // say what it waits for and leave at once on a second Ctrl-C.
    Runtime.install({ logger: new DefaultLogger(debug ? 'INFO' : 'ERROR'), shutdownSignals: [] });
  } catch {
    // Installed already (tests): keep that one.
  }
}

/**
 * The built-in emulator of the run's provider, in this process. Its port and its journal of
 * accepted tasks live in the state folder (per provider), so that a run killed mid-flight resumes
 * against an emulator that still knows its tasks, at the address its result URLs name.
 */
export async function startEmbeddedEmulator(
  stateDir: string,
  provider: EmulatedProvider,
  env: NodeJS.ProcessEnv = process.env,
  /** The secret this process's webhook receiver checks: the first API's accounts sign with it. */
  webhookSecret?: string,
): Promise<StartedEmulator> {
  const emulator = emulatorOf(provider);
  const configFile = env.PIXELMILL_EMULATOR_CONFIG;
  // Validated as a whole, but only the keys the file sets override the embedded defaults below.
  if (configFile) emulator.load(configFile);
  const fromFile = configFile
    ? ((parseYaml(readFileSync(configFile, 'utf8')) as Record<string, unknown> | null) ?? {})
    : {};
  const named = (file: string) =>
    provider === 'apimart' ? file : file.replace('emulator', `emulator-${provider}`);
  const record = join(stateDir, named('emulator.json'));
  // Only a hint: a damaged record is written anew below.
  const saved = readJsonFile<{ port?: number }>(record, 'ignore') ?? {};
  const config: Record<string, unknown> = {
    time_scale: emulator.embeddedTimeScale ?? EMBEDDED_TIME_SCALE,
    state_file: join(stateDir, named('emulator-tasks.jsonl')),
    ...fromFile,
    ...(provider === 'apimart' && webhookSecret !== undefined
      ? {
          accounts: accountsSigningWith(
            fromFile.accounts as EmulatorConfigOverrides['accounts'],
            webhookSecret,
          ),
        }
      : {}),
    host: '127.0.0.1',
  };
  let started: StartedEmulator;
  try {
    started = await emulator.start({ config: { ...config, port: saved.port ?? 0 } });
  } catch {
    started = await emulator.start({ config: { ...config, port: 0 } }); // the saved port is taken
  }
  writeJsonFile(record, { port: Number(new URL(started.url).port) });
  return started;
}

/** The first API's emulated accounts, each signing its webhooks with `secret`. */
function accountsSigningWith(
  accounts: EmulatorConfigOverrides['accounts'] | undefined,
  secret: string,
): EmulatorConfigOverrides['accounts'] {
  return (accounts ?? DEFAULT_EMULATOR_CONFIG.accounts).map((account) => ({
    ...account,
    webhook_secret: secret,
  }));
}

export interface InProcessWorkers {
  done: Promise<void>;
  /** Starts a graceful shutdown: running activities finish (up to 10 s), nothing new is taken. */
  interrupt(): void;
  inFlight(): InFlightActivities;
  stop(): Promise<void>;
}

/** Workers in this process for one API account: its task queues, and only its base URL and key. */
export async function startInProcessWorkers(
  endpoint: TemporalEndpoint,
  api: { baseUrl: string; apiKey: string },
  queues: TaskQueues,
  /** The run's webhook secret, for a provider that takes the caller's at submit (BFL). */
  webhookSecret?: string,
): Promise<InProcessWorkers> {
  const connection = await connectWorkerConnection(endpoint);
  const referenceServer = await ReferenceServer.start(referencePort(process.env));
  const runtime = createActivityRuntime({
    apiBaseUrl: api.baseUrl,
    apiKey: api.apiKey,
    ...(webhookSecret !== undefined ? { webhookSecret } : {}),
    env: process.env,
    referenceServer,
    // This process is the run's only worker: earlier CLI processes that still look alive to the
    // server (for up to 90 s) must not halve its share of the rate.
    apiWorkers: 1,
  });
  const workers = await createPixelmillWorkers({
    connection,
    namespace: endpoint.namespace,
    queues,
    activities: runtime.activities,
  });
  const done = workers.run();
  return {
    done,
    interrupt: () => workers.shutdown(),
    inFlight: () => workers.inFlight(),
    async stop() {
      workers.shutdown();
      await done.catch(() => undefined);
      await runtime.close();
      await referenceServer.close();
      await connection.close();
    },
  };
}
