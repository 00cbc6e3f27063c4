// The receiver's signature checks, one per provider it has keys for, built once and kept (a
// verifier may cache what it fetched: signing keys, a secret asked of the provider). Keys come
// from the environment only: the shared secret (the account's, or the one pixelmill gives the
// provider at submit), and whatever else a provider's verifier reads there (its
// `webhookKeysFromEnv`, such as where it publishes its signing keys). No provider is named here.
import { providerNamed } from '../providers/registry.js';
import {
  PROVIDER_NAMES,
  type ProviderName,
  type WebhookKeys,
  type WebhookVerifier,
} from '../providers/types.js';

export interface ReceiverKeys {
  /** The shared webhook secret (PIXELMILL_WEBHOOK_SECRET or the manifest's `webhooks.secret_env`). */
  secret?: string;
  /** Per provider, anything else its verifier needs (a key URL, a secret fetcher); wins over the environment's. */
  extra?: Partial<Record<ProviderName, WebhookKeys>>;
}

/** The verifier of each provider named in `providers` (all by default), built on first use. */
export function receiverVerifiers(
  keys: ReceiverKeys,
  providers: readonly ProviderName[] = PROVIDER_NAMES,
  env: NodeJS.ProcessEnv = process.env,
): (provider: ProviderName) => WebhookVerifier | undefined {
  const built = new Map<ProviderName, WebhookVerifier | undefined>();
  return (provider) => {
    if (!providers.includes(provider)) return undefined;
    if (!built.has(provider)) {
      const { webhookVerifier, webhookKeysFromEnv } = providerNamed(provider);
      const own: WebhookKeys = {
        ...(keys.secret ? { secret: keys.secret } : {}),
        ...webhookKeysFromEnv?.(env),
        ...keys.extra?.[provider],
      };
      built.set(provider, webhookVerifier?.(own));
    }
    return built.get(provider);
  };
}
