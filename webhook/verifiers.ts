// The receiver's signature checks, one per provider it has keys for, built once and kept (a
// verifier may cache what it fetched: fal's signing keys, Replicate's secret). Keys come from the
// environment only: the shared secret (the first API's and BFL's, which pixelmill gives BFL at
// submit), and where a provider publishes its own keys.
import { providerNamed } from '../providers/registry.js';
import {
  PROVIDER_NAMES,
  type ProviderName,
  type WebhookKeys,
  type WebhookVerifier,
} from '../providers/types.js';

/** fal's JWKS address (its documented one unless set: the emulator's, a proxy's). */
export const FAL_JWKS_URL_ENV = 'PIXELMILL_FAL_JWKS_URL';
export const FAL_JWKS_URL = 'https://rest.fal.ai/.well-known/jwks.json';

export interface ReceiverKeys {
  /** The shared webhook secret (PIXELMILL_WEBHOOK_SECRET or the manifest's `webhooks.secret_env`). */
  secret?: string;
  /** Per provider, anything else its verifier needs (fal's JWKS URL, Replicate's secret fetcher). */
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
      const { webhookVerifier } = providerNamed(provider);
      const own: WebhookKeys = {
        ...(keys.secret ? { secret: keys.secret } : {}),
        ...(provider === 'fal' ? { jwksUrl: env[FAL_JWKS_URL_ENV] || FAL_JWKS_URL } : {}),
        ...keys.extra?.[provider],
      };
      built.set(provider, webhookVerifier?.(own));
    }
    return built.get(provider);
  };
}
