// Where a run's webhook settings come from: the public address from PIXELMILL_WEBHOOK_URL or the
// manifest's `webhooks.public_url`, the secret from the environment variable the manifest names
// (PIXELMILL_WEBHOOK_SECRET by default). The secret is read here and handed only to the receiver.
import { UserError } from '../common/errors.js';

export const WEBHOOK_URL_ENV = 'PIXELMILL_WEBHOOK_URL';
export const DEFAULT_WEBHOOK_SECRET_ENV = 'PIXELMILL_WEBHOOK_SECRET';

/** The receiver's address as the API must call it, or undefined when none is configured. */
export function webhookPublicUrl(
  configured: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const fromEnv = env[WEBHOOK_URL_ENV];
  if (!fromEnv) return configured;
  if (!URL.canParse(fromEnv) || !/^https?:$/.test(new URL(fromEnv).protocol) || /[?#]/.test(fromEnv)) {
    throw new UserError(
      'config_invalid',
      `${WEBHOOK_URL_ENV}=${fromEnv} is not an http(s) URL without query or fragment`,
    );
  }
  return fromEnv;
}

/** The webhook secret from `secretEnv`; a receiver without one would accept anybody's signals. */
export function webhookSecret(secretEnv: string, env: NodeJS.ProcessEnv = process.env): string {
  const secret = env[secretEnv];
  if (!secret) {
    throw new UserError(
      'webhook_secret_missing',
      `${secretEnv} is not set: set it to the account's webhook secret (webhook signatures are checked with it)`,
    );
  }
  return secret;
}
