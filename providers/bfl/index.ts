// Black Forest Labs' FLUX API (docs.bfl.ai): a task per image, submitted to `POST /v1/{model}`
// and polled one at a time at the polling_url its answer names (the poll carries the result), a
// sample URL that lives 10 minutes, 24 active tasks per key (a concurrency, answered 429 beyond),
// the cost in credits told at submit, webhooks authenticated with the secret given at submit,
// and no cancel, idempotency key or start deadline. docs/providers.md#bfl says what maps to what.
import type { ImageProvider } from '../types.js';
import { BflClient } from './client.js';
import { DEFAULT_MODEL } from './models.js';
import { mapBflRequest } from './request.js';
import { SAMPLE_URL_LIFE_MS } from './task-result.js';
import { bflWebhookVerifier } from './webhook.js';

/** "Sending requests to our API is limited to 24 active tasks" (6 for flux-kontext-max). */
export const DOCUMENTED_ACTIVE_TASKS = 24;

export const bfl: ImageProvider = {
  name: 'bfl',
  title: 'Black Forest Labs (FLUX API)',
  defaultModel: DEFAULT_MODEL,
  capabilities: {
    lookup: { kind: 'single' },
    resultInLookup: true,
    // The body's shape is not in BFL's reference: one without the sample URL is polled once.
    webhooks: { resultInPayload: 'sometimes' },
    limits: {
      rate: false,
      concurrency: true,
      documentedConcurrency: DOCUMENTED_ACTIVE_TASKS,
      overConcurrency: 'refused',
    },
    resultRetentionMs: SAMPLE_URL_LIFE_MS,
    cancel: false,
    idempotencyKeys: false,
    reportsCost: true,
    startDeadline: false,
    maxImagesPerTask: 1,
  },
  mapRequest: mapBflRequest,
  createClient: (options) => new BflClient(options),
  webhookVerifier: bflWebhookVerifier,
};

export { BflClient, ENDPOINTS, TASK_NOT_FOUND } from './client.js';
export { BFL_MODELS } from './models.js';
export { bflTrustsOrigin } from './hosts.js';
export { bflWebhookVerifier, SECRET_HEADER, SIGNATURE_HEADER, type BflWebhookKeys } from './webhook.js';
