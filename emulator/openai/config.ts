// The OpenAI emulator's configuration: defaults, a strict schema (an unknown key is an error, not a
// silently ignored typo), YAML loading with every problem at file:line:col, and the change a PUT of
// /_emulator/config makes on a running emulator (everything but where it listens, its seed, its
// clock scale, its accounts and its state file).
//
// Where OpenAI's documentation leaves a fact open, there is a knob whose default is the best
// reading; docs/emulators/openai.md lists each under "Unconfirmed facts and the knob for each".
import { z } from 'zod';
import { duplicateAccountProblems, validateChange } from '../core/config-checks.js';
import {
  configLoaders,
  deepFreeze,
  isPlainObject,
  mergeOverDefaults,
  rate,
  secondsRange,
  type ConfigOverrides,
  type ConfigSpec,
} from '../core/config.js';

const keySchema = z.strictObject({
  key: z.string().min(1, 'must not be empty'),
  status: z.enum(['active', 'disabled']).default('active'),
});

const accountSchema = z.strictObject({
  /** Named in rate-limit and enqueued-limit messages as the organization. */
  id: z.string().min(1, 'must not be empty'),
  keys: z.array(keySchema).default([]),
});

/** Batches picked by a fault: each batch with probability `rate`, and those created `batches`-th (0-based). */
const batchPick = z.strictObject({
  rate,
  batches: z.array(z.number().int().min(0)),
});

const serverErrorRates = z.strictObject({
  /** POST /v1/files */
  upload: rate,
  /** GET and DELETE of /v1/files and /v1/files/{id} */
  files: rate,
  /** GET /v1/files/{id}/content */
  content: rate,
  /** POST /v1/batches */
  create_batch: rate,
  /** GET /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel */
  batches: rate,
  /** POST /v1/images/generations */
  images: rate,
});

const limitsSchema = z.strictObject({
  /** Images per minute on POST /v1/images/generations (a request of n images takes n). */
  images_per_minute: z.number().int().min(1),
  /** Requests per minute on POST /v1/images/generations; null: none. */
  requests_per_minute: z.number().int().min(1).nullable(),
  /** Send `retry-after` (seconds) on a 429; the rate-limit headers are always sent. */
  retry_after: z.boolean(),
  /** Whatever is enqueued across an account's batches not yet ended; over it a batch fails validation. */
  enqueued: z.strictObject({
    unit: z.enum(['tokens', 'images', 'requests']),
    limit: z.number().int().min(1).nullable(),
  }),
  /** The largest upload POST /v1/files takes (the Files API's per-file limit). */
  max_upload_bytes: z.number().int().min(1),
  /** The largest batch input file; a larger one fails the batch at validation. */
  max_input_bytes: z.number().int().min(1),
  /** The most requests (lines) in a batch input file; more fails the batch at validation. */
  max_requests_per_batch: z.number().int().min(1),
});

const batchesSchema = z.strictObject({
  /** From create to in_progress (or failed), scaled by time_scale. */
  validation_seconds: secondsRange,
  /** From in_progress until the last request has run, drawn per batch, scaled by time_scale. */
  batch_duration: secondsRange,
  finalizing_seconds: secondsRange,
  /** From a cancel to `cancelled` ("up to 10 minutes"). */
  cancelling_seconds: secondsRange,
  /** The completion window (24 h), scaled by time_scale: unfinished requests then expire. */
  completion_window_hours: z.number().positive(),
  /** A batch expires once this share of its requests has run; null: only at expires_at. */
  expire_at_fraction: rate.nullable(),
  /** Share of requests that fail with a 500 server_error in the error file. */
  request_failure_rate: rate,
  /** Share of requests refused by moderation (400 moderation_blocked). */
  moderation_rate: rate,
  /** A prompt containing one (case-insensitive) is refused by moderation, in a batch and in sync calls. */
  moderation_words: z.array(z.string().min(1, 'must not be empty')),
  /**
   * A batch request whose prompt contains one (case-insensitive) succeeds, but its output line is
   * damaged: cut off mid-JSON (`malformed`), or its `b64_json` decodes to bytes that are no image
   * (`undecodable`). The client must fail that item alone.
   */
  damaged_line_words: z.strictObject({
    malformed: z.array(z.string().min(1, 'must not be empty')),
    undecodable: z.array(z.string().min(1, 'must not be empty')),
  }),
  /** Batches that fail validation whatever their input. */
  fail_validation: batchPick,
  /** Batches that "complete" with every request failed. */
  all_requests_fail: batchPick,
});

const imagesSchema = z.strictObject({
  /** How long a sync call is held before its answer, scaled by time_scale. */
  generation_seconds: secondsRange,
  /** Share of sync calls answered 500 server_error after being held. */
  failure_rate: rate,
  /**
   * Bytes added to every image (a PNG private ancillary chunk, JPEG comment segments, a WebP RIFF
   * chunk): still decodable, so that an output file of a few hundred lines reaches gigabytes.
   */
  image_padding_bytes: z.number().int().min(0),
  /**
   * `per_prompt`: each image shows its prompt; `one_per_size`: one image per size, format and
   * index, so a large benchmark does not spend the emulator's CPU drawing thousands of images.
   */
  content: z.enum(['per_prompt', 'one_per_size']),
  /** Models POST /v1/images/generations and batch lines accept. */
  models: z.array(z.string().min(1)).min(1),
});

const faultsSchema = z.strictObject({
  /** Share of POST /v1/batches answered 429 rate_limit_exceeded (nothing created). */
  create_429_rate: rate,
  /** Share of requests of each class answered 500/502/503 before anything else happens. */
  server_error_rate: serverErrorRates,
  /** A download of an output or error file is cut (connection destroyed) after this many bytes. */
  cut_output_after_bytes: z.number().int().min(1).nullable(),
  /** `once_per_file`: the first download of each file is cut; `every_response`: every one. */
  cut_output_mode: z.enum(['once_per_file', 'every_response']),
});

export const OpenAIConfigSchema = z.strictObject({
  host: z.string().min(1, 'must not be empty'),
  port: z.number().int().min(0).max(65535),
  time_scale: z.number().positive(),
  seed: z.number().int(),
  /** An append-only journal (with input files beside it) a restarted emulator resumes from. */
  state_file: z.string().min(1).nullable(),
  accounts: z.array(accountSchema),
  limits: limitsSchema,
  batches: batchesSchema,
  images: imagesSchema,
  faults: faultsSchema,
});

export type OpenAIConfig = z.output<typeof OpenAIConfigSchema>;
/** What `startOpenAIEmulator({ config })` accepts: any subset, deep-merged over the defaults (arrays replace). */
export type OpenAIConfigOverrides = ConfigOverrides<z.input<typeof OpenAIConfigSchema>>;

/** The demo key of the default config; public, so the CLI may print it. */
export const DEMO_OPENAI_KEY = 'sk-openai-demo-key';

const MIB = 1024 * 1024;

export const DEFAULT_OPENAI_CONFIG: OpenAIConfig = deepFreeze({
  host: '127.0.0.1',
  port: 8790,
  time_scale: 1,
  seed: 1,
  state_file: null,
  accounts: [{ id: 'org-emulator', keys: [{ key: DEMO_OPENAI_KEY, status: 'active' }] }],
  limits: {
    // gpt-image-1's tier-1 row of its model page: 5 images per minute; no request rate is listed.
    images_per_minute: 5,
    requests_per_minute: null,
    retry_after: true,
    enqueued: { unit: 'tokens', limit: null },
    max_upload_bytes: 512 * MIB,
    max_input_bytes: 200 * MIB,
    max_requests_per_batch: 50_000,
  },
  batches: {
    validation_seconds: [2, 10],
    batch_duration: [600, 3600],
    finalizing_seconds: [5, 30],
    cancelling_seconds: [5, 60],
    completion_window_hours: 24,
    expire_at_fraction: null,
    request_failure_rate: 0,
    moderation_rate: 0,
    moderation_words: ['forbidden'],
    damaged_line_words: { malformed: [], undecodable: [] },
    fail_validation: { rate: 0, batches: [] },
    all_requests_fail: { rate: 0, batches: [] },
  },
  images: {
    generation_seconds: [10, 40],
    failure_rate: 0,
    image_padding_bytes: 0,
    content: 'per_prompt',
    models: ['gpt-image-1', 'gpt-image-1-mini', 'gpt-image-1.5'],
  },
  faults: {
    create_429_rate: 0,
    server_error_rate: { upload: 0, files: 0, content: 0, create_batch: 0, batches: 0, images: 0 },
    cut_output_after_bytes: null,
    cut_output_mode: 'once_per_file',
  },
} satisfies OpenAIConfig);

const SPEC: ConfigSpec<OpenAIConfig> = {
  provider: 'openai',
  defaults: DEFAULT_OPENAI_CONFIG,
  schema: OpenAIConfigSchema as z.ZodType<OpenAIConfig, unknown>,
  secretParents: ['accounts'],
  extraProblems: duplicateAccountProblems,
};

const loaders = configLoaders(SPEC);
/** For config objects (tests, benchmarks): merged over the defaults, then validated. */
export const parseOpenAIConfig = loaders.parse;
/** Reads a YAML config file; every problem is reported as `file:line:col path: message`. */
export const loadOpenAIConfig = loaders.load;
/** Parses YAML text; `file` only names the source in problems. */
export const parseOpenAIConfigText = loaders.parseText;

/** What a running emulator lets a PUT of /_emulator/config change: the knobs, not its identity. */
export const KnobsChangeSchema = z.strictObject({
  limits: limitsSchema.partial().optional(),
  batches: batchesSchema.partial().optional(),
  images: imagesSchema.partial().optional(),
  faults: faultsSchema.extend({ server_error_rate: serverErrorRates.partial() }).partial().optional(),
});
export type KnobsChange = z.input<typeof KnobsChangeSchema>;

/** `config` with `change` merged in, or every problem (an invalid change changes nothing). */
export function applyKnobsChange(
  config: OpenAIConfig,
  change: unknown,
): { config?: OpenAIConfig; problems: string[] } {
  if (!isPlainObject(change)) return { problems: ['(root): expected an object of knobs'] };
  const checked = validateChange(KnobsChangeSchema, change);
  if (!checked.change) return { problems: checked.problems };
  const merged = mergeOverDefaults(config, checked.change);
  const result = OpenAIConfigSchema.safeParse(merged);
  if (!result.success)
    return { problems: result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  return { config: deepFreeze(result.data), problems: [] };
}
