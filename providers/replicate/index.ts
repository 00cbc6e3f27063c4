// Replicate's predictions API (replicate.com/docs, read 2026-11-26): predictions created per item
// with a Cancel-After start deadline, their states learnt from the predictions list filtered by
// `created_after` (100 a page, each entry with its output) beside per-prediction GETs, webhooks
// carrying the whole prediction, signed the Standard Webhooks way with a secret fetched from the
// API. Limits are rates (600 creates a minute, 3,000 other calls, short bursts allowed), not
// concurrency; output files are deleted an hour after a prediction ends; cost is not reported.
import type { ImageProvider, ProviderClientOptions } from '../types.js';
import { LIST_PAGE_SIZE, ReplicateClient } from './client.js';
import { DEFAULT_MODEL, mapReplicateRequest } from './request.js';
import { RESULT_RETENTION_MS } from './task-result.js';
import { replicateWebhookVerifier } from './webhook.js';

export const replicate: ImageProvider = {
  name: 'replicate',
  title: 'Replicate (predictions API)',
  defaultModel: DEFAULT_MODEL,
  capabilities: {
    lookup: { kind: 'list', pageSize: LIST_PAGE_SIZE },
    resultInLookup: true,
    webhooks: { resultInPayload: 'always' },
    limits: { rate: true, concurrency: false },
    resultRetentionMs: RESULT_RETENTION_MS,
    cancel: true,
    idempotencyKeys: false,
    reportsCost: false,
    startDeadline: true,
    maxImagesPerTask: 4,
  },
  mapRequest: mapReplicateRequest,
  createClient: (options) => new ReplicateClient(options),
  webhookKeysFor: (api) => ({ fetchSecret: replicateSecretFetcher(api) }),
  webhookVerifier: replicateWebhookVerifier,
};

/**
 * `WebhookKeys.fetchSecret` for the receiver: the account's signing secret from
 * GET /v1/webhooks/default/secret, with a client of its own closed after the call.
 */
export function replicateSecretFetcher(options: ProviderClientOptions): () => Promise<string> {
  return async () => {
    const client = new ReplicateClient(options);
    try {
      return await client.webhookSecret();
    } finally {
      await client.close();
    }
  };
}

export { ReplicateClient, ENDPOINTS, cancelAfter } from './client.js';
export { ReplicateWebhookSecretError } from './webhook.js';
