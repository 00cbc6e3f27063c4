// The fal emulator's configuration: defaults, the strict schema, and loading from objects or YAML
// (emulator/core/config.ts). docs/emulators/fal.md documents every knob; the field names are a
// public contract, so an unknown key is an error rather than a silently ignored typo.
import { z } from 'zod';
import { duplicateAccountProblems } from '../core/config-checks.js';
import {
  deepFreeze,
  loadConfigFile,
  parseConfig,
  parseConfigText,
  rate,
  secondsRange,
  type ConfigOverrides,
  type ConfigSpec,
} from '../core/config.js';

export const DEMO_FAL_KEY = 'DEMO_FAL_KEY';

export const KEY_STATUSES = ['active', 'disabled'] as const;
export const MODERATION_MODES = ['nsfw_flag', 'error'] as const;
export type ModerationMode = (typeof MODERATION_MODES)[number];

const concurrency = z.number().int().min(1);
const seconds = z.number().min(0);

const modelSchema = z.strictObject({
  /** Run time of one request (all its images), emulated seconds. */
  seconds: secondsRange,
  max_images: z.number().int().min(1),
  /** Price of one output megapixel in USD, for the bill in stats. */
  price_per_megapixel: z.number().min(0),
  /** What a flagged prompt gets: black images with has_nsfw_concepts true, or a 422 error. */
  moderation: z.enum(MODERATION_MODES),
});

const accountSchema = z.strictObject({
  id: z.string().min(1, 'must not be empty'),
  /** Sent as X-Fal-Webhook-User-Id; defaults to the account id. */
  user_id: z.string().min(1).nullable().default(null),
  /** This account's own concurrency limit, over `concurrency`. */
  concurrency: concurrency.nullable().default(null),
  keys: z.array(z.strictObject({ key: z.string().min(1), status: z.enum(KEY_STATUSES).default('active') })),
});

export const FalConfigSchema = z.strictObject({
  host: z.string().min(1),
  port: z.number().int().min(0).max(65535),
  time_scale: z.number().positive(),
  seed: z.number().int(),
  state_file: z.string().min(1).nullable(),
  /** Base written into status/response/cancel and image URLs; null: the emulator's own URL. */
  public_url: z.url({ protocol: /^https?$/ }).nullable(),
  accounts: z.array(accountSchema).min(1),
  /** Requests of one account IN_PROGRESS at once; the rest wait IN_QUEUE (fal: 2 for new accounts, up to 40). */
  concurrency,
  models: z.record(
    z.string().regex(/^[^/\s]+\/[^/\s]+(\/[^\s]+)?$/, 'expected owner/app or owner/app/path'),
    modelSchema,
  ),
  /** Accept any owner/app as a model with `default_model`'s settings instead of answering 404. */
  accept_unknown_models: z.boolean(),
  default_model: modelSchema,
  generation: z.strictObject({
    /** Dispatch delay before a request can start (runner acquisition), emulated seconds. */
    queue_seconds: secondsRange,
    /** Run time of a request whose input fails validation (it still reaches a runner). */
    validation_seconds: seconds,
    failure_rate: rate,
    blocked_words: z.array(z.string().min(1)),
  }),
  retention: z.strictObject({
    /** How long a completed request's result is retrievable (the 1 h reading). */
    result_seconds: seconds,
    /** ... and for results of `large_result_bytes` or more (the 6 min reading). */
    large_result_seconds: seconds,
    large_result_bytes: z.number().int().min(0),
    /** How long image URLs on the emulated CDN live (X-Fal-Object-Lifecycle-Preference overrides). */
    cdn_seconds: seconds,
  }),
  /** Read X-Fal-Request-Timeout and lifecycle seconds as emulated seconds (scaled by time_scale). */
  scale_client_durations: z.boolean(),
  /**
   * The submit's answer carries `queue_position` (fal's JavaScript client types it as a queue
   * status), or only the id and URLs (the queue page's example): clients must handle both.
   */
  queue_position_at_submit: z.boolean(),
  webhooks: z.strictObject({
    /** Gaps before each retry, emulated seconds: fal retries 10 times over 2 hours. */
    retry_delays_seconds: z.array(seconds),
    attempt_timeout_seconds: z.number().positive(),
    /** Ed25519 private keys as base64url 32-byte seeds; empty: derived from `seed`. */
    signing_keys: z.array(z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'expected a base64url 32-byte seed')),
    /** Start with two keys in the JWKS, signing with the second: clients must try every key. */
    rotated: z.boolean(),
    /** Share of webhooks sent with `payload: null` and a `payload_error` (the client must fetch). */
    payload_error_rate: rate,
  }),
  faults: z.strictObject({
    /** Injected 5xx per request class, before the request acts. */
    server_error_rates: z.strictObject({ submit: rate, status: rate, result: rate, cancel: rate, cdn: rate }),
    truncate_download_rate: rate,
    slow_download_kbps: z.number().min(0),
    webhook_duplicate_rate: rate,
    webhook_lost_rate: rate,
    /** Requests that stay IN_PROGRESS forever (holding a concurrency slot until cancelled). */
    stuck_request_rate: rate,
    /** Share of runner attempts failing with a 503/504/429 the queue retries (invisible but slower). */
    runner_retry_rate: rate,
    /** Emulated seconds each retried runner attempt costs. */
    runner_retry_seconds: seconds,
    /** Submits that create their request, then drop the connection before answering. */
    lost_submit_response_rate: rate,
    blank_image_rate: rate,
    corrupt_image_rate: rate,
    wrong_size_image_rate: rate,
    /** Images whose bytes are in the other format than their content type says. */
    wrong_format_image_rate: rate,
  }),
});

export type FalConfig = z.output<typeof FalConfigSchema>;
export type FalModelConfig = FalConfig['default_model'];
export type FalConfigOverrides = ConfigOverrides<z.input<typeof FalConfigSchema>>;

const FLUX_DEV: FalModelConfig = {
  seconds: [3, 6],
  max_images: 4,
  price_per_megapixel: 0.025,
  moderation: 'nsfw_flag',
};

export const DEFAULT_FAL_CONFIG: FalConfig = deepFreeze({
  host: '127.0.0.1',
  port: 8788,
  time_scale: 1,
  seed: 1,
  state_file: null,
  public_url: null,
  accounts: [
    {
      id: 'acct_demo',
      user_id: 'user_demo',
      concurrency: null,
      keys: [{ key: DEMO_FAL_KEY, status: 'active' }],
    },
  ],
  concurrency: 2,
  models: {
    'fal-ai/flux/dev': FLUX_DEV,
    'fal-ai/flux/schnell': { ...FLUX_DEV, seconds: [1, 2], price_per_megapixel: 0.003 },
    'fal-ai/flux-pro/v1.1': { ...FLUX_DEV, seconds: [4, 8], price_per_megapixel: 0.04 },
  },
  accept_unknown_models: false,
  default_model: FLUX_DEV,
  generation: {
    queue_seconds: [0.1, 0.5],
    validation_seconds: 0.2,
    failure_rate: 0,
    blocked_words: ['forbidden'],
  },
  retention: {
    result_seconds: 3600,
    large_result_seconds: 360,
    large_result_bytes: 10_240,
    cdn_seconds: 7 * 86_400,
  },
  scale_client_durations: true,
  queue_position_at_submit: true,
  webhooks: {
    // 10 retries, about 2 hours in all, growing gaps (fal documents the count and the span only).
    retry_delays_seconds: [15, 30, 60, 120, 240, 480, 900, 1500, 1800, 2100],
    attempt_timeout_seconds: 15,
    signing_keys: [],
    rotated: false,
    payload_error_rate: 0,
  },
  faults: {
    server_error_rates: { submit: 0, status: 0, result: 0, cancel: 0, cdn: 0 },
    truncate_download_rate: 0,
    slow_download_kbps: 0,
    webhook_duplicate_rate: 0,
    webhook_lost_rate: 0,
    stuck_request_rate: 0,
    runner_retry_rate: 0,
    runner_retry_seconds: 1,
    lost_submit_response_rate: 0,
    blank_image_rate: 0,
    corrupt_image_rate: 0,
    wrong_size_image_rate: 0,
    wrong_format_image_rate: 0,
  },
} satisfies FalConfig);

export const FAL_CONFIG_SPEC: ConfigSpec<FalConfig> = {
  provider: 'fal',
  defaults: DEFAULT_FAL_CONFIG,
  schema: FalConfigSchema as unknown as z.ZodType<FalConfig, unknown>,
  secretParents: ['accounts'],
  extraProblems: duplicateAccountProblems,
};

export const parseFalConfig = (overrides: unknown): FalConfig => parseConfig(FAL_CONFIG_SPEC, overrides);
export const loadFalConfig = (file: string): FalConfig => loadConfigFile(FAL_CONFIG_SPEC, file);
export const parseFalConfigText = (text: string, file: string): FalConfig =>
  parseConfigText(FAL_CONFIG_SPEC, text, file);
