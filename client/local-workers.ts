// Workers for a command that starts a run and waits for it (`run`, `retry-failed`): embedded mode runs them in this process (with the built-in emulator when no API is
// configured); with a cluster, workers are the cluster's (`pixelmill worker`), so none start here.
import { UserError } from '../common/errors.js';
import { DEMO_API_KEY } from '../emulator/index.js';
import { startEmbeddedEmulator, startInProcessWorkers } from './embedded.js';
import { stateDirectory, type Session } from './session.js';

export interface LocalWorkers {
  emulated: boolean;
  /** Resolves when in-process workers stop (Ctrl-C); undefined with a cluster. */
  stopped?: Promise<void>;
  close(): Promise<void>;
}

export async function startLocalWorkers(
  session: Session,
  apiBaseUrl: string | undefined,
  say: (line: string) => void,
  /** The built-in emulator's webhook secret, when the run has webhooks on. */
  emulatorWebhookSecret?: string,
): Promise<LocalWorkers> {
  const emulated = !apiBaseUrl;
  if (session.mode === 'external') {
    if (emulated) {
      throw new UserError(
        'api_not_configured',
        'no API configured: set PIXELMILL_API_BASE_URL (or api.base_url in the manifest); the built-in emulator runs only without TEMPORAL_ADDRESS',
      );
    }
    return { emulated, close: async () => undefined };
  }
  const cleanups: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    let api: { baseUrl?: string; apiKey?: string } = apiBaseUrl ? { baseUrl: apiBaseUrl } : {};
    if (emulated) {
      const emulator = await startEmbeddedEmulator(stateDirectory(), process.env, emulatorWebhookSecret);
      cleanups.push(() => emulator.close());
      api = { baseUrl: emulator.url, apiKey: DEMO_API_KEY };
      say(
        `pixelmill: no API configured: using the built-in emulator at ${emulator.url} (this run is emulated)`,
      );
    }
    const workers = await startInProcessWorkers(session.endpoint, api);
    cleanups.push(() => workers.stop());
    return { emulated, stopped: workers.done, close };
  } catch (error) {
    await close();
    throw error;
  }
}
