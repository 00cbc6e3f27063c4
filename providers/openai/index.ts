// OpenAI's Images API (developers.openai.com/api/reference): GPT image models, driven two ways.
// Batch mode (`api.mode: batch`, the default for runs of more than a few dozen items): a JSONL
// file of requests per shard, a Batch per file polled until it ends within 24 h, at half the
// synchronous price, its results streamed from one output file (images as base64). Sync mode
// (`api.mode: sync`): one held call per item. No tasks, webhooks for images, idempotency key or
// start deadline; cost from each answer's token usage. docs/providers.md#openai says what maps to what.
import type { ImageProvider } from '../types.js';
import { OpenAIClient } from './client.js';
import { DEFAULT_MODEL, MAX_IMAGES } from './models.js';
import { defaultCreditsPerImage, imageCredits, priceBothWays } from './pricing.js';
import { mapOpenAIRequest } from './request.js';

/** Output files are kept 30 days by default: far longer than any run takes to read them. */
const OUTPUT_FILE_RETENTION_MS = 30 * 24 * 3_600_000;

export const openai: ImageProvider = {
  name: 'openai',
  title: "OpenAI's Images API (Batch or sync)",
  defaultModel: DEFAULT_MODEL,
  capabilities: {
    submission: { batch: 'batch-file', sync: 'held-call' },
    // Unused: no task is ever looked up (the batch's status is the one lookup).
    lookup: { kind: 'single' },
    resultInLookup: true,
    webhooks: false,
    limits: { rate: true, concurrency: false },
    resultRetentionMs: OUTPUT_FILE_RETENTION_MS,
    cancel: true,
    idempotencyKeys: false,
    reportsCost: true,
    startDeadline: false,
    maxImagesPerTask: MAX_IMAGES,
  },
  mapRequest: mapOpenAIRequest,
  defaultCreditsPerImage,
  imageCredits,
  pricesByMode: priceBothWays,
  createClient: (options) => new OpenAIClient(options),
};

export { OpenAIClient, ENDPOINTS, type BatchPage, type FileContent } from './client.js';
export { DEFAULT_MODEL } from './models.js';
export { costOfUsage, imageCredits, imagePrice, priceBothWays } from './pricing.js';
