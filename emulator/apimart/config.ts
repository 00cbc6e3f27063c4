// The first API's emulator configuration: its defaults, its schema, what the file format allows
// (normalize) and the checks the schema cannot express. Reading, merging and reporting every
// problem (at file:line:col for a YAML file) are core's (core/config.ts), under this API's own
// error codes (`emulator_config_invalid`).
//
// The YAML field names are a public contract (tests outside the project write these files), so
// the schema is strict: an unknown key is an error rather than a silently ignored typo.
import { z } from 'zod';
import { duplicateAccountProblems, validateChange } from '../core/config-checks.js';
import {
  deepFreeze,
  isPlainObject,
  loadConfigFile,
  parseConfig,
  parseConfigText,
  rate,
  type ConfigOverrides,
  type ConfigSpec,
} from '../core/config.js';

export const KEY_STATUSES = ['active', 'disabled', 'expired'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

const ALL_SIZES = [
  '1:1',
  '2:3',
  '3:2',
  '3:4',
  '4:3',
  '4:5',
  '5:4',
  '9:16',
  '16:9',
  '9:21',
  '21:9',
  '1:2',
  '2:1',
];

/** `[min, max]` seconds; a single number is accepted and means `[n, n]` (see normalize). */
const secondsRange = z
  .tuple([z.number().min(0), z.number().min(0)])
  .refine(([min, max]) => min <= max, 'the first value (min) must not exceed the second (max)');
const perSecond = z.number().positive();
const burst = z.number().min(1);
const perMinute = z.number().int().min(1);
/** A token bucket per key and class, and optionally a fixed one-minute window beside it (rate-limit.ts). */
const bucket = z.strictObject({ per_second: perSecond, burst, per_minute: perMinute.optional() });
const perResolution = <T extends z.ZodType>(value: T) =>
  z.strictObject({ '1K': value, '2K': value, '4K': value });
const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });

const keySchema = z.strictObject({
  key: z.string().min(1, 'must not be empty'),
  status: z.enum(KEY_STATUSES).default('active'),
});

const accountSchema = z.strictObject({
  id: z.string().min(1, 'must not be empty'),
  credits: z.number().int().min(0).default(1_000_000),
  webhook_secret: z.string().default(''),
  keys: z.array(keySchema).default([]),
});

export const EmulatorConfigSchema = z.strictObject({
  host: z.string().min(1, 'must not be empty'),
  port: z.number().int().min(0).max(65535),
  time_scale: z.number().positive(),
  seed: z.number().int(),
  result_base_url: httpUrl.nullable(),
  state_file: z.string().min(1).nullable(),
  max_n: z.number().int().min(1),
  sizes: z
    .array(
      z
        .string()
        .regex(/^(auto|[1-9]\d{0,3}:[1-9]\d{0,3})$/, 'expected an aspect ratio such as "16:9" (or "auto")'),
    )
    .min(1, 'must list at least one size'),
  accounts: z.array(accountSchema),
  rate_limits: z.strictObject({ submit: bucket, query: bucket }),
  generation: z.strictObject({
    queue_seconds: secondsRange,
    seconds: perResolution(secondsRange),
    failure_rate: rate,
    blocked_words: z.array(z.string().min(1, 'must not be empty')),
    credits_per_image: perResolution(z.number().int().min(0)),
  }),
  result_ttl_seconds: z.number().positive(),
  /** Submits with an Idempotency-Key header: replayed within ttl_seconds (docs/emulator.md). */
  idempotency: z.strictObject({ enabled: z.boolean(), ttl_seconds: z.number().positive() }),
  /** `image_urls` downloaded and checked at submit (docs/emulator.md, "Reference images"). */
  reference_images: z.strictObject({
    fetch: z.boolean(),
    timeout_ms: z.number().int().min(1),
    max_bytes: z.number().int().min(1),
  }),
  faults: z.strictObject({
    server_error_rate: rate,
    truncate_download_rate: rate,
    slow_download_kbps: z.number().min(0),
    webhook_duplicate_rate: rate,
    malformed_response_rate: rate,
    /** A submit whose prompt contains one (case-insensitive) answers 500 build_request_failed, every time. */
    poisoned_prompt_words: z.array(z.string().min(1, 'must not be empty')),
    /** Share of tasks that are never finished: processing forever, no webhook, no charge. */
    stuck_task_rate: rate,
    /**
     * Share of submits that create their task and then close the connection before answering:
     * the client cannot tell whether the task exists (what an Idempotency-Key is for).
     */
    lost_submit_response_rate: rate,
    /** Share of completed tasks whose images have the wrong aspect ratio (a square for any other size). */
    wrong_aspect_image_rate: rate,
    /** Share of completed tasks whose images are blank (one flat colour, as some safety filters return). */
    blank_image_rate: rate,
    /** Share of completed tasks whose images are corrupt: whole files, but their pixel data cut short. */
    corrupt_image_rate: rate,
    /** Share of completed tasks whose images are JPEG bytes served as image/png. */
    jpeg_image_rate: rate,
  }),
});

export type EmulatorConfig = z.output<typeof EmulatorConfigSchema>;
export type AccountConfig = EmulatorConfig['accounts'][number];

/** What `startEmulator({ config })` accepts: any subset, deep-merged over the defaults (arrays replace). */
export type EmulatorConfigOverrides = ConfigOverrides<z.input<typeof EmulatorConfigSchema>>;

export const DEFAULT_EMULATOR_CONFIG: EmulatorConfig = deepFreeze({
  host: '127.0.0.1',
  port: 8787,
  time_scale: 1,
  seed: 1,
  result_base_url: null,
  state_file: null,
  max_n: 4,
  sizes: ALL_SIZES,
  accounts: [
    {
      id: 'acct_demo',
      credits: 1_000_000,
      webhook_secret: 'whsec_demo',
      keys: [{ key: 'sk-live-demo', status: 'active' }],
    },
  ],
  rate_limits: { submit: { per_second: 10, burst: 20 }, query: { per_second: 50, burst: 100 } },
  generation: {
    queue_seconds: [1, 5],
    seconds: { '1K': [40, 55], '2K': [50, 75], '4K': [70, 130] },
    failure_rate: 0,
    blocked_words: ['forbidden'],
    credits_per_image: { '1K': 1, '2K': 2, '4K': 4 },
  },
  result_ttl_seconds: 86_400,
  idempotency: { enabled: true, ttl_seconds: 86_400 },
  reference_images: { fetch: true, timeout_ms: 10_000, max_bytes: 20 * 1024 * 1024 },
  faults: {
    server_error_rate: 0,
    truncate_download_rate: 0,
    slow_download_kbps: 0,
    webhook_duplicate_rate: 0,
    malformed_response_rate: 0,
    poisoned_prompt_words: [],
    stuck_task_rate: 0,
    lost_submit_response_rate: 0,
    wrong_aspect_image_rate: 0,
    blank_image_rate: 0,
    corrupt_image_rate: 0,
    jpeg_image_rate: 0,
  },
} satisfies EmulatorConfig);

/** The demo key of the default config; the CLI may print it because it is public. */
export const DEMO_API_KEY = 'sk-live-demo';

/** Normalize: the conveniences the file format allows, turned into the one canonical shape. */
function normalize(input: unknown): unknown {
  if (!isPlainObject(input)) return input;
  const config = { ...input };
  const toRange = (value: unknown): unknown => (typeof value === 'number' ? [value, value] : value);
  if (isPlainObject(config.generation)) {
    const generation: Record<string, unknown> = {
      ...config.generation,
      queue_seconds: toRange(config.generation.queue_seconds),
    };
    if (isPlainObject(generation.seconds)) {
      generation.seconds = Object.fromEntries(
        Object.entries(generation.seconds).map(([k, v]) => [k, toRange(v)]),
      );
    }
    config.generation = generation;
  }
  if (typeof config.result_base_url === 'string')
    config.result_base_url = config.result_base_url.replace(/\/+$/, '');
  return config;
}

/**
 * Unknown keys are named, so a typo is easy to spot, except under `accounts` (secretParents): a
 * key pasted where a field name belongs (`- sk-live-...: active`) is a secret and must not reach
 * the terminal.
 */
const SPEC: ConfigSpec<EmulatorConfig> = {
  defaults: DEFAULT_EMULATOR_CONFIG,
  schema: z.preprocess(normalize, EmulatorConfigSchema),
  secretParents: ['accounts'],
  extraProblems: duplicateAccountProblems,
};

/**
 * A change to the rate limits of a running emulator (PUT /_emulator/rate-limits, setRateLimits):
 * a field left out keeps its value, `per_minute: null` removes the minute window.
 */
const bucketChange = z.strictObject({
  per_second: perSecond.optional(),
  burst: burst.optional(),
  per_minute: perMinute.nullable().optional(),
});
export const RateLimitsChangeSchema = z.strictObject({
  submit: bucketChange.optional(),
  query: bucketChange.optional(),
});
export type RateLimitsChange = z.input<typeof RateLimitsChangeSchema>;
export type ValidRateLimitsChange = z.output<typeof RateLimitsChangeSchema>;

/** Validates a change of the rate limits; problems are `path: message`, every one of them. */
export function validateRateLimitsChange(input: unknown): {
  change?: ValidRateLimitsChange;
  problems: string[];
} {
  return validateChange(RateLimitsChangeSchema, input);
}

/** For config objects (tests, benchmarks): merged over the defaults, then validated. */
export function parseEmulatorConfig(input: unknown): EmulatorConfig {
  return parseConfig(SPEC, input);
}

/** Reads a YAML config file; every problem is reported as `file:line:col path: message`. */
export function loadEmulatorConfig(file: string): EmulatorConfig {
  return loadConfigFile(SPEC, file);
}

/** Parses YAML text; `file` only names the source in problems. */
export function parseEmulatorConfigText(text: string, file: string): EmulatorConfig {
  return parseConfigText(SPEC, text, file);
}
