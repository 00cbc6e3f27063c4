// fal's queue API (docs.fal.ai): requests submitted to `POST queue.fal.run/{model_id}`, learned one
// at a time by their status URL or followed on its stream, and collected from their result URL (the status does not tell a
// success from a failure); limited by how many run at once (2 for a new account, up to 40 as credits
// are bought), never refused for it: the rest wait IN_QUEUE. No rate limit, idempotency key or cost
// in the answers; a start deadline (X-Fal-Request-Timeout), cancel, and webhooks signed with
// Ed25519 whose payload is the result unless fal could not serialize it. A result is kept 6 minutes
// to 1 hour after completion. docs/providers.md#fal says what maps to what.
import type { ImageProvider } from '../types.js';
import { FalClient } from './client.js';
import { DEFAULT_MODEL, MAX_IMAGES } from './models.js';
import { RESULT_RETENTION_MS } from './outcome.js';
import { mapFalRequest } from './request.js';
import { falWebhookKeysFromEnv, falWebhookVerifier } from './webhook.js';

/** Requests IN_PROGRESS at once for a new account (docs: concurrency limits; up to 40 with purchases). */
export const DOCUMENTED_CONCURRENCY = 2;

export const fal: ImageProvider = {
  name: 'fal',
  title: "fal's queue API",
  defaultModel: DEFAULT_MODEL,
  capabilities: {
    lookup: { kind: 'single' },
    resultInLookup: false,
    statusStream: true,
    webhooks: { resultInPayload: 'sometimes' },
    limits: {
      rate: false,
      concurrency: true,
      documentedConcurrency: DOCUMENTED_CONCURRENCY,
      overConcurrency: 'queued',
    },
    resultRetentionMs: RESULT_RETENTION_MS,
    cancel: true,
    idempotencyKeys: false,
    reportsCost: false,
    startDeadline: true,
    maxImagesPerTask: MAX_IMAGES,
  },
  mapRequest: mapFalRequest,
  createClient: (options) => new FalClient(options),
  webhookKeysFromEnv: falWebhookKeysFromEnv,
  webhookVerifier: (keys) => falWebhookVerifier(keys),
};

export { FalClient, ENDPOINTS, MIN_START_TIMEOUT_S } from './client.js';
export { FAL_MODELS, NAMED_SIZES } from './models.js';
export { RESULT_RETENTION_MS, FAILURE } from './outcome.js';
export { FalJwksUnavailableError, JWKS_MAX_AGE_MS, JWKS_REFETCH_GAP_MS } from './jwks.js';
export {
  DOCUMENTED_JWKS_URL,
  JWKS_URL_ENV,
  TIMESTAMP_TOLERANCE_MS,
  falWebhookKeysFromEnv,
  falWebhookVerifier,
} from './webhook.js';
