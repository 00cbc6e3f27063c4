// The first API (../shared/spec/async-image-api.md, the service known as APIMart): asynchronous
// tasks with batch lookups of 500, Idempotency-Key on submit, terminal-state webhooks signed with
// the account's secret, credits reported per task, results kept 24 h, and a rate limit per key.
import type { ImageProvider } from '../types.js';
import { createImageApiClient } from './client.js';
import { ApimartClient } from './provider-client.js';
import { DEFAULT_MODEL, mapApimartRequest } from './request.js';
import { apimartWebhookVerifier } from './webhook.js';
import { MAX_BATCH_IDS } from './wire.js';

export const apimart: ImageProvider = {
  name: 'apimart',
  title: 'the asynchronous task API (APIMart)',
  defaultModel: DEFAULT_MODEL,
  capabilities: {
    lookup: { kind: 'batch', maxIds: MAX_BATCH_IDS },
    resultInLookup: false,
    webhooks: { resultInPayload: 'always' },
    limits: { rate: true, concurrency: false },
    resultRetentionMs: 24 * 60 * 60_000,
    cancel: false,
    idempotencyKeys: true,
    reportsCost: true,
    startDeadline: false,
    maxImagesPerTask: 10,
  },
  mapRequest: mapApimartRequest,
  createClient: (options) => new ApimartClient(createImageApiClient(options)),
  webhookVerifier: apimartWebhookVerifier,
};

export { ImageApiClient, createImageApiClient, ENDPOINTS } from './client.js';
export { ApimartClient, MISSING_FROM_BATCH } from './provider-client.js';
