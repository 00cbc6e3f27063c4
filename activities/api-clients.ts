// One provider client per (provider, base URL, key) for the life of the worker, so every API
// activity of a run shares one keep-alive pool. The provider is the one the run's plan names; the
// address and key come from the worker's deps or environment, falling back to the manifest's api
// block as frozen in the plan; they never travel in inputs.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { isUserError } from '../common/errors.js';
import { FailureType } from '../common/failure-types.js';
import type { ResolvedDeps } from './deps.js';
import type { PlanMeta } from '../runstate/index.js';
import { providerNamed } from '../providers/registry.js';
import type { ProviderClient } from '../providers/types.js';

export const FALLBACK_API_KEY_ENV = 'PIXELMILL_API_KEY';
export const API_BASE_URL_ENV = 'PIXELMILL_API_BASE_URL';

function notConfigured(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureType.ApiNotConfigured, message, nonRetryable: true });
}

export class ApiClients {
  readonly #clients = new Map<string, ProviderClient>();

  constructor(private readonly deps: ResolvedDeps) {}

  /** The client for a run; a non-retryable `ApiNotConfigured` failure when address or key is missing. */
  forPlan(meta: Pick<PlanMeta, 'apiBaseUrl' | 'apiKeyEnv' | 'provider'>): ProviderClient {
    const baseUrl = nonEmpty(this.deps.apiBaseUrl) ?? meta.apiBaseUrl;
    if (baseUrl === undefined || baseUrl === '') {
      throw notConfigured(
        `no image API address: set ${API_BASE_URL_ENV} for the worker or api.base_url in the manifest`,
      );
    }
    const apiKey =
      nonEmpty(this.deps.apiKey) ??
      nonEmpty(this.deps.env[meta.apiKeyEnv]) ??
      nonEmpty(this.deps.env[FALLBACK_API_KEY_ENV]);
    if (apiKey === undefined) {
      const names =
        meta.apiKeyEnv === FALLBACK_API_KEY_ENV
          ? FALLBACK_API_KEY_ENV
          : `${meta.apiKeyEnv} or ${FALLBACK_API_KEY_ENV}`;
      throw notConfigured(`no image API key: set ${names} in the worker's environment`);
    }
    // The key is part of the identity of a pool, but only its digest is kept as a map key.
    const provider = providerNamed(meta.provider);
    const id = `${provider.name}\0${baseUrl}\0${createHash('sha256').update(apiKey).digest('hex')}`;
    let client = this.#clients.get(id);
    if (client === undefined) {
      try {
        client = provider.createClient({ baseUrl, apiKey, now: this.deps.now });
      } catch (error) {
        if (isUserError(error)) throw notConfigured(error.message);
        throw error;
      }
      this.#clients.set(id, client);
    }
    return client;
  }

  async close(): Promise<void> {
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    await Promise.all(clients.map((client) => client.close()));
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
