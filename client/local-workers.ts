// The API a command that starts a run and waits for it (`run`, `retry-failed`) gives the run, and
// the workers that serve it. The run belongs to one API account (common/api-account.ts): the
// base URL and key of this command's environment, or the built-in emulator when embedded mode has
// no API configured. Embedded mode runs the workers in this process, on that account's task
// queues only, so they never serve another CLI's run; with a cluster, the workers are the
// cluster's (`pixelmill worker` with the same base URL and key).
import { apiAccountId, displayBaseUrl, API_ACCOUNT_ID } from '../common/api-account.js';
import { UserError } from '../common/errors.js';
import { taskQueuesOf } from '../common/names.js';
import { emulatorOf } from '../emulator/providers.js';
import { providerNamed } from '../providers/registry.js';
import { DEFAULT_PROVIDER, type ProviderName, type WebhookKeys } from '../providers/types.js';
import { FALLBACK_API_KEY_ENV, API_BASE_URL_ENV } from '../activities/api-clients.js';
import { startEmbeddedEmulator, startInProcessWorkers, type InProcessWorkers } from './embedded.js';
import { stateDirectory, type Session } from './session.js';

/** Which provider the manifest names, where it says the API is and which variable holds its key. */
export interface ApiSettings {
  provider?: ProviderName;
  apiBaseUrl?: string;
  apiKeyEnv: string;
}

export interface RunApi {
  /** The account's id: the run's task queues are named by it. */
  account: string;
  /** Without credentials: for messages. */
  baseUrl: string;
  emulated: boolean;
}

export interface LocalWorkers {
  api: RunApi;
  /** What this process's webhook receiver needs of the account (Replicate's secret, the emulator's JWKS). */
  webhookKeys: WebhookKeys;
  /** The workers in this process; undefined with a cluster (workers run elsewhere). */
  inProcess?: Pick<InProcessWorkers, 'interrupt' | 'inFlight'> & {
    /** Resolves when they have stopped (after a Ctrl-C). */
    stopped: Promise<void>;
  };
  close(): Promise<void>;
}

/** The key for `settings` in `env`: the manifest's variable, else PIXELMILL_API_KEY. */
function apiKeyFor(settings: ApiSettings, env: NodeJS.ProcessEnv): string | undefined {
  return env[settings.apiKeyEnv] || env[FALLBACK_API_KEY_ENV] || undefined;
}

function missingKey(settings: ApiSettings, baseUrl: string, external: boolean): UserError {
  const names =
    settings.apiKeyEnv === FALLBACK_API_KEY_ENV
      ? FALLBACK_API_KEY_ENV
      : `${settings.apiKeyEnv} (or ${FALLBACK_API_KEY_ENV})`;
  return new UserError(
    'api_key_missing',
    `no API key for ${displayBaseUrl(baseUrl)}: set ${names}` +
      (external ? ', or pass --api-account with the account id `pixelmill worker` prints' : ''),
  );
}

export async function startLocalWorkers(
  session: Session,
  settings: ApiSettings,
  say: (line: string) => void,
  options: {
    /**
     * The run's webhook secret, when it has webhooks on: the built-in emulator's accounts sign
     * with it, and submits give it to a provider that takes the caller's (BFL).
     */
    emulatorWebhookSecret?: string;
    /** An account id given on the command line (cluster mode, where only workers hold the key). */
    apiAccount?: string;
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<LocalWorkers> {
  const env = options.env ?? process.env;
  const baseUrl = env[API_BASE_URL_ENV] || settings.apiBaseUrl;
  if (session.mode === 'external') {
    if (!baseUrl) {
      throw new UserError(
        'api_not_configured',
        `no API configured: set ${API_BASE_URL_ENV} (or api.base_url in the manifest); the built-in emulator runs only without TEMPORAL_ADDRESS`,
      );
    }
    const key = apiKeyFor(settings, env);
    let account = options.apiAccount;
    if (account !== undefined && !API_ACCOUNT_ID.test(account)) {
      throw new UserError(
        'config_invalid',
        `--api-account ${account} is not an account id (a and 16 hex digits)`,
      );
    }
    if (account === undefined) {
      if (key === undefined) throw missingKey(settings, baseUrl, true);
      account = apiAccountId(baseUrl, key);
    }
    return {
      api: { account, baseUrl: displayBaseUrl(baseUrl), emulated: false },
      webhookKeys: {},
      close: async () => undefined,
    };
  }
  if (options.apiAccount !== undefined) {
    throw new UserError(
      'config_invalid',
      '--api-account is for a Temporal cluster (TEMPORAL_ADDRESS); embedded runs use the API configured here',
    );
  }
  const cleanups: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const provider = settings.provider ?? DEFAULT_PROVIDER;
    let api: { baseUrl: string; apiKey: string };
    let jwksUrl: string | undefined;
    if (baseUrl) {
      const apiKey = apiKeyFor(settings, env);
      if (apiKey === undefined) throw missingKey(settings, baseUrl, false);
      api = { baseUrl, apiKey };
    } else {
      const emulator = await startEmbeddedEmulator(
        stateDirectory(),
        provider,
        env,
        options.emulatorWebhookSecret,
      );
      cleanups.push(() => emulator.close());
      api = { baseUrl: emulator.url, apiKey: emulatorOf(provider).demoKey };
      jwksUrl = emulatorOf(provider).jwksUrl?.(emulator.url);
      const which =
        provider === DEFAULT_PROVIDER ? 'the built-in emulator' : `the built-in emulator of ${provider}`;
      say(`pixelmill: no API configured: using ${which} at ${emulator.url} (this run is emulated)`);
    }
    const account = apiAccountId(api.baseUrl, api.apiKey);
    const workers = await startInProcessWorkers(
      session.endpoint,
      api,
      taskQueuesOf(account),
      options.emulatorWebhookSecret,
    );
    cleanups.push(() => workers.stop());
    return {
      api: { account, baseUrl: displayBaseUrl(api.baseUrl), emulated: !baseUrl },
      webhookKeys: {
        ...providerNamed(provider).webhookKeysFor?.(api),
        ...(jwksUrl !== undefined ? { jwksUrl } : {}),
      },
      inProcess: { stopped: workers.done, interrupt: workers.interrupt, inFlight: workers.inFlight },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
