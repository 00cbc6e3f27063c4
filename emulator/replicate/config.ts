// The Replicate emulator's configuration: schema, defaults, and the object-level checks.
//
// Strict like the first emulator's config (an unknown key is an error, not a silent typo), and
// parsed the same way: merged over the defaults, normalized, validated, every problem returned as
// `path: message`. Each knob and its default is documented in docs/emulators/replicate.md; the
// ones that settle an unconfirmed fact of the API say so there.
import { z } from 'zod';
import {
  configLoaders,
  deepFreeze,
  isPlainObject,
  rate,
  secondsRange,
  type ConfigOverrides,
  type ConfigProblem,
  type ConfigSpec,
} from '../core/index.js';
import { DEFAULT_MODELS } from './models.js';
import { WEBHOOK_EVENTS } from './wire.js';

/** An http(s) base URL, kept without its trailing slashes. */
const httpUrl = z.preprocess(
  (value) => (typeof value === 'string' ? value.replace(/\/+$/, '') : value),
  z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }),
);
const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'expected a 64-character lowercase hex version id');
const modelName = z.string().regex(/^[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._-]*$/i, 'expected "owner/name"');

/**
 * A rate limit: a token bucket per token, refilled with `requests` every `window_seconds` (evenly),
 * holding at most `burst`: the API's "600 requests per minute, short bursts allowed".
 */
const limit = z.strictObject({
  requests: z.number().positive(),
  window_seconds: z.number().positive(),
  burst: z.number().min(1),
});

const webhookSecret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, 'expected "whsec_" followed by base64 (the Standard Webhooks form)');

const accountSchema = z.strictObject({
  username: z.string().min(1, 'must not be empty'),
  tokens: z.array(z.string().min(1, 'must not be empty')).min(1, 'must list at least one token'),
  webhook_secret: webhookSecret,
  /** Balance in US dollars; predictions are billed from it as they end. */
  credit_usd: z.number(),
});

const propertySchema = z.strictObject({
  type: z.enum(['string', 'integer', 'number', 'boolean']),
  enum: z
    .array(z.union([z.string(), z.number()]))
    .min(1)
    .optional(),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
  default: z.unknown().optional(),
});

const modelSchema = z.strictObject({
  name: modelName,
  /** Official models run by name (`/v1/models/{owner}/{name}/predictions`) and report version "hidden". */
  official: z.boolean(),
  versions: z.array(hex64),
  /** An image model's output: a list of URLs (flux-schnell) or one URL (flux-1.1-pro). */
  output: z.enum(['list', 'single']),
  input: z.strictObject({
    required: z.array(z.string()),
    properties: z.record(z.string(), propertySchema),
  }),
  price: z.strictObject({ per_image_usd: z.number().min(0), per_second_usd: z.number().min(0) }),
});

const requestClassRates = z.strictObject({
  create: rate,
  get: rate,
  list: rate,
  cancel: rate,
  /** Every other API route (the webhook secret). */
  other: rate,
  /** Downloads of output files. */
  delivery: rate,
});

export const ReplicateConfigSchema = z.strictObject({
  host: z.string().min(1, 'must not be empty'),
  port: z.number().int().min(0).max(65535),
  time_scale: z.number().positive(),
  seed: z.number().int(),
  /** What urls.get/cancel/web and list cursors start with; null = the emulator's own URL. */
  base_url: httpUrl.nullable(),
  /** The host of output files (replicate.delivery); null = `{url}/delivery`. */
  delivery_base_url: httpUrl.nullable(),
  state_file: z.string().min(1).nullable(),
  accounts: z.array(accountSchema).min(1, 'must list at least one account'),
  models: z.array(modelSchema).min(1, 'must list at least one model'),
  generation: z.strictObject({
    /** `starting`: queue wait and cold boot. */
    queue_seconds: secondsRange,
    /** `processing`: predict() running. */
    run_seconds: secondsRange,
    failure_rate: rate,
    failure_message: z.string().min(1),
    /** A prompt containing one fails as the safety checker fails it, unless the input disables the checker. */
    blocked_words: z.array(z.string().min(1, 'must not be empty')),
    /** A run longer than this fails with "Prediction timed out" (30 minutes, the lifecycle page). */
    run_timeout_seconds: z.number().positive(),
  }),
  retention: z.strictObject({
    /** Input, output, logs and output files of API predictions are removed after this (1 hour). */
    seconds: z.number().positive(),
    /** Counted from completion, or from creation (the docs do not say which). */
    from: z.enum(['completed', 'created']),
  }),
  list: z.strictObject({
    page_size: z.number().int().min(1).max(1000),
    include_output: z.boolean(),
    include_logs: z.boolean(),
  }),
  limits: z.strictObject({
    create: limit,
    other: limit,
    /** Stronger create limit while an account's credit is below `below_usd`; null: none. */
    low_credit: z.strictObject({ below_usd: z.number(), create: limit }).nullable(),
    /** Whether a 429 carries Retry-After (unconfirmed). */
    retry_after_header: z.boolean(),
    /** Whether a 429 body carries `retry_after` (seconds) beside `detail` (unconfirmed). */
    retry_after_in_body: z.boolean(),
    /** Wording of the 429 detail: the rate-limit page shows both over time. */
    throttle_message: z.enum(['resets_in', 'expected_available']),
  }),
  webhooks: z.strictObject({
    /** Gaps before each retry of a `completed` webhook (exponential; the last about 1 minute after completion). */
    retry_delays_seconds: z.array(z.number().positive()),
    timeout_seconds: z.number().positive(),
    /** The events sent when a create names no webhook_events_filter. */
    default_events: z.array(z.enum(WEBHOOK_EVENTS)),
    /** Refuse webhook URLs that are not https (the API describes "an HTTPS URL"; unconfirmed). */
    require_https: z.boolean(),
  }),
  faults: z.strictObject({
    /** Share of requests of each class answered 500/502/503. */
    server_error_rate: requestClassRates,
    /** Share of creates that create their prediction, then drop the connection unanswered. */
    lost_create_response_rate: rate,
    truncate_download_rate: rate,
    slow_download_kbps: z.number().min(0),
    webhook_duplicate_rate: rate,
    /** Share of webhook deliveries never sent (every attempt of them). */
    webhook_lost_rate: rate,
    /** Share of predictions that stay `processing` forever (no timeout, no webhook, not billed). */
    stuck_prediction_rate: rate,
  }),
});

export type ReplicateConfig = z.output<typeof ReplicateConfigSchema>;
export type AccountConfig = ReplicateConfig['accounts'][number];
export type ModelConfig = ReplicateConfig['models'][number];
export type LimitConfig = z.output<typeof limit>;
export type RequestClass = keyof ReplicateConfig['faults']['server_error_rate'];

/** What `startReplicateEmulator({ config })` takes: any subset, deep-merged over the defaults (arrays replace). */
export type ReplicateConfigOverrides = ConfigOverrides<z.input<typeof ReplicateConfigSchema>>;

/** The demo token of the default account; public, so the CLI may print it. */
export const DEMO_REPLICATE_TOKEN = 'r8_DEMOreplicateEmulatorToken00000000000';
/** The demo account's signing secret (what GET /v1/webhooks/default/secret answers). */
export const DEMO_WEBHOOK_SECRET = 'whsec_cGl4ZWxtaWxsLXJlcGxpY2F0ZS1kZW1vLWtleQ==';

export const DEFAULT_REPLICATE_CONFIG: ReplicateConfig = deepFreeze({
  host: '127.0.0.1',
  port: 8788,
  time_scale: 1,
  seed: 1,
  base_url: null,
  delivery_base_url: null,
  state_file: null,
  accounts: [
    {
      username: 'demo',
      tokens: [DEMO_REPLICATE_TOKEN],
      webhook_secret: DEMO_WEBHOOK_SECRET,
      credit_usd: 1000,
    },
  ],
  models: DEFAULT_MODELS,
  generation: {
    queue_seconds: [0.5, 3],
    run_seconds: [1, 4],
    failure_rate: 0,
    failure_message: 'Prediction failed: the model raised an error (emulated).',
    blocked_words: ['forbidden'],
    run_timeout_seconds: 1800,
  },
  retention: { seconds: 3600, from: 'completed' },
  list: { page_size: 100, include_output: true, include_logs: false },
  limits: {
    create: { requests: 600, window_seconds: 60, burst: 600 },
    other: { requests: 3000, window_seconds: 60, burst: 3000 },
    low_credit: { below_usd: 5, create: { requests: 6, window_seconds: 60, burst: 1 } },
    retry_after_header: true,
    retry_after_in_body: false,
    throttle_message: 'resets_in',
  },
  webhooks: {
    retry_delays_seconds: [4, 8, 16, 32],
    timeout_seconds: 10,
    default_events: ['output', 'completed'],
    require_https: false,
  },
  faults: {
    server_error_rate: { create: 0, get: 0, list: 0, cancel: 0, other: 0, delivery: 0 },
    lost_create_response_rate: 0,
    truncate_download_rate: 0,
    slow_download_kbps: 0,
    webhook_duplicate_rate: 0,
    webhook_lost_rate: 0,
    stuck_prediction_rate: 0,
  },
} satisfies ReplicateConfig);

/**
 * Usernames, tokens, model names and version ids must be unique. Checked on the raw input so these
 * problems show beside the schema's own. A token is a secret: the problem names where, never what.
 */
function duplicateProblems(input: unknown): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (!isPlainObject(input)) return problems;
  const seen = (set: Set<unknown>, value: unknown): boolean => set.has(value) || (set.add(value), false);
  const usernames = new Set<unknown>();
  const tokens = new Set<unknown>();
  if (Array.isArray(input.accounts)) {
    input.accounts.forEach((account: unknown, i) => {
      if (!isPlainObject(account)) return;
      if (seen(usernames, account.username))
        problems.push({ path: ['accounts', i, 'username'], message: 'duplicate username' });
      if (!Array.isArray(account.tokens)) return;
      account.tokens.forEach((token: unknown, j) => {
        if (typeof token === 'string' && seen(tokens, token))
          problems.push({
            path: ['accounts', i, 'tokens', j],
            message: 'duplicate token (already used above)',
          });
      });
    });
  }
  const names = new Set<unknown>();
  const versions = new Set<unknown>();
  if (Array.isArray(input.models)) {
    input.models.forEach((model: unknown, i) => {
      if (!isPlainObject(model)) return;
      if (seen(names, model.name))
        problems.push({ path: ['models', i, 'name'], message: 'duplicate model name' });
      if (!Array.isArray(model.versions)) return;
      model.versions.forEach((version: unknown, j) => {
        if (seen(versions, version))
          problems.push({ path: ['models', i, 'versions', j], message: 'duplicate version id' });
      });
    });
  }
  return problems;
}

const SPEC: ConfigSpec<ReplicateConfig> = {
  provider: 'replicate',
  defaults: DEFAULT_REPLICATE_CONFIG,
  schema: ReplicateConfigSchema as z.ZodType<ReplicateConfig, unknown>,
  // A key pasted where a field name belongs (`- r8_...: x`) is a secret: never named.
  secretParents: ['accounts'],
  extraProblems: duplicateProblems,
};

const loaders = configLoaders(SPEC);
/** For config objects (tests, benchmarks): merged over the defaults, then validated. */
export const parseReplicateConfig = loaders.parse;
/** Reads a YAML config file; every problem is reported as `file:line:col path: message`. */
export const loadReplicateConfig = loaders.load;
/** Parses YAML text; `file` only names the source in problems. */
export const parseReplicateConfigText = loaders.parseText;

/** A change of the limits on a running emulator (PUT /_emulator/limits): fields left out keep their value. */
const limitChange = z.strictObject({
  requests: z.number().positive().optional(),
  window_seconds: z.number().positive().optional(),
  burst: z.number().min(1).optional(),
});
export const LimitsChangeSchema = z.strictObject({
  create: limitChange.optional(),
  other: limitChange.optional(),
  low_credit: z
    .strictObject({ below_usd: z.number().optional(), create: limitChange.optional() })
    .nullable()
    .optional(),
});
export type LimitsChange = z.input<typeof LimitsChangeSchema>;
