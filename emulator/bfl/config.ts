// The BFL emulator's configuration: defaults, a strict schema (an unknown key is an error, not a
// silently ignored typo), and validation that reports every problem as `path: message`.
//
// Where BFL's documentation leaves a fact open, the config has a knob and the default is the
// reading the documentation (or BFL's own published material) supports; docs/emulators/bfl.md
// lists each one under "Unconfirmed facts and the knob for each".
import { z } from 'zod';
import { duplicateAccountProblems, validateChange } from '../core/config-checks.js';
import {
  configLoaders,
  deepFreeze,
  rate,
  secondsRange,
  type ConfigOverrides,
  type ConfigSpec,
} from '../core/config.js';
import { BFL_MODELS, type BflModel } from './models.js';

export const KEY_STATUSES = ['active', 'disabled'] as const;

const hostName = z
  .string()
  .regex(/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/, 'expected a host name such as "localhost" or "127.0.0.1"');

/** Flat credits per image (FLUX.1), or per megapixel (FLUX.2: first MP, each further MP, input MP). */
const cost = z.union([
  z.number().min(0),
  z.strictObject({ first_mp: z.number().min(0), extra_mp: z.number().min(0), input_mp: z.number().min(0) }),
]);

const modelSchema = z.strictObject({
  /** Off: `POST /v1/{model}` answers 404 as an unknown route does. */
  enabled: z.boolean(),
  cost,
  /** Generation time once the task starts, scaled by time_scale. */
  seconds: secondsRange,
  /** At most this many active tasks of this model per account (key, with limits.scope: key); null: only the overall limit. */
  max_active: z.number().int().min(1).nullable(),
});

const keySchema = z.strictObject({
  key: z.string().min(1, 'must not be empty'),
  status: z.enum(KEY_STATUSES).default('active'),
});

const accountSchema = z.strictObject({
  id: z.string().min(1, 'must not be empty'),
  credits: z.number().min(0).default(100_000),
  keys: z.array(keySchema).default([]),
});

const serverErrorRates = z.strictObject({ submit: rate, get_result: rate, delivery: rate, credits: rate });

export const BflConfigSchema = z.strictObject({
  host: z.string().min(1, 'must not be empty'),
  port: z.number().int().min(0).max(65535),
  time_scale: z.number().positive(),
  seed: z.number().int(),
  state_file: z.string().min(1).nullable(),
  /**
   * The host written into `polling_url` (with the emulator's own port), standing for the regional
   * host BFL answers with: a client must poll the URL it is given, not one it builds. null: the
   * emulator's own host.
   */
  polling_host: hostName.nullable(),
  /**
   * With polling_host set: a get_result that reaches the emulator under another host name answers
   * "Task not found", as another cluster would (BFL: "you must use the polling_url returned").
   */
  polling_host_only: z.boolean(),
  /** The host of `result.sample` URLs (delivery-*.bfl.ai at BFL); null: the polling host. */
  delivery_host: hostName.nullable(),
  accounts: z.array(accountSchema),
  auth: z.strictObject({
    /** BFL's OpenAPI declares no security on get_result; true makes it check x-key as submits do. */
    get_result_requires_key: z.boolean(),
  }),
  models: z.strictObject(
    Object.fromEntries(BFL_MODELS.map((model) => [model, modelSchema])) as Record<
      BflModel,
      typeof modelSchema
    >,
  ),
  generation: z.strictObject({
    /** Time between submit and the start of generation (the task is Pending throughout). */
    queue_seconds: secondsRange,
    /** Share of tasks that end in Error. */
    failure_rate: rate,
    /** A prompt containing one (case-insensitive) ends Request Moderated, before generation. */
    request_moderation_words: z.array(z.string().min(1, 'must not be empty')),
    /** A prompt containing one ends Content Moderated, after generation. */
    content_moderation_words: z.array(z.string().min(1, 'must not be empty')),
    request_moderation_rate: rate,
    content_moderation_rate: rate,
    /** FLUX.2 sizes above this many megapixels are refused (422). */
    max_megapixels: z.number().positive(),
    /** Megapixels billed per input image of a FLUX.2 edit (the emulator does not fetch them). */
    input_mp_per_image: z.number().min(0),
    /** pydantic's default ignores unknown body fields; `forbid` answers 422 extra_forbidden. */
    extra_fields: z.enum(['ignore', 'forbid']),
  }),
  limits: z.strictObject({
    /** Active (Pending) tasks allowed at once; a submit over it gets 429. */
    active_tasks: z.number().int().min(1),
    /** Whom the limit counts: the account (help.bfl.ai) or each key. */
    scope: z.enum(['account', 'key']),
    /** The Retry-After header of a 429, in seconds; null sends none (none is documented). */
    retry_after_seconds: z.number().int().min(0).nullable(),
  }),
  sample: z.strictObject({
    /** How long a `result.sample` URL stays valid (10 minutes at BFL), scaled by time_scale. */
    url_ttl_seconds: z.number().positive(),
    /** What an expired sample URL answers: 403 (Azure Blob's expired signature) or 404. */
    expired_status: z.union([z.literal(403), z.literal(404)]),
    /** Whether each get_result signs the URL afresh (valid ttl from that poll) or repeats the first one. */
    resign_on_poll: z.boolean(),
  }),
  /** How long a finished task stays retrievable before get_result says "Task not found". */
  task_retention_seconds: z.number().positive(),
  /** When a 200 for an unknown or expired id (status "Task not found") is a 404 instead. */
  task_not_found_status: z.union([z.literal(200), z.literal(404)]),
  billing: z.strictObject({
    /** Whether a task that ends in Error keeps its cost (moderated tasks are never charged). */
    charge_errors: z.boolean(),
  }),
  webhooks: z.strictObject({
    /** The body: get_result's object plus `timestamp` (BFL's skill docs), or the smaller notice seen in the wild. */
    payload: z.enum(['get_result', 'notice']),
    /**
     * The submit answer of a request with a webhook_url: OpenAPI's AsyncWebhookResponse
     * `{id, status, webhook_url, cost, ...}` (no polling_url), or the AsyncResponse every other
     * submit gets (`async_response`).
     */
    submit_answer: z.enum(['webhook_response', 'async_response']),
    /**
     * `hmac_sha256`: `X-BFL-Signature: sha256=<hex HMAC-SHA256(body, webhook_secret)>` (BFL's
     * skill docs); `secret_header`: the secret itself in `X-Webhook-Secret`; `none`.
     */
    signature: z.enum(['hmac_sha256', 'secret_header', 'none']),
    timeout_seconds: z.number().positive(),
    /** Gaps before each retry of a failed delivery, scaled by time_scale. */
    retry_seconds: z.array(z.number().min(0)),
  }),
  faults: z.strictObject({
    /** Share of requests of each class answered 500/502/503 before anything else happens. */
    server_error_rate: serverErrorRates,
    truncate_download_rate: rate,
    slow_download_kbps: z.number().min(0),
    webhook_duplicate_rate: rate,
    /** Share of webhooks never sent. */
    webhook_lost_rate: rate,
    /** Share of tasks Pending forever (they keep their active slot). */
    stuck_task_rate: rate,
    /** Share of accepted submits whose connection is closed before the answer. */
    lost_submit_response_rate: rate,
  }),
});

export type BflConfig = z.output<typeof BflConfigSchema>;
export type BflModelConfig = BflConfig['models'][BflModel];

/** What `startBflEmulator({ config })` accepts: any subset, deep-merged over the defaults (arrays replace). */
export type BflConfigOverrides = ConfigOverrides<z.input<typeof BflConfigSchema>>;

/** The demo key of the default config; public, so the CLI may print it. */
export const DEMO_BFL_KEY = 'bfl-demo-key';

const model = (
  costValue: BflModelConfig['cost'],
  secondsRangeValue: [number, number],
  maxActive: number | null = null,
): BflModelConfig => ({ enabled: true, cost: costValue, seconds: secondsRangeValue, max_active: maxActive });

export const DEFAULT_BFL_CONFIG: BflConfig = deepFreeze({
  host: '127.0.0.1',
  port: 8789,
  time_scale: 1,
  seed: 1,
  state_file: null,
  polling_host: null,
  polling_host_only: true,
  delivery_host: null,
  accounts: [{ id: 'acct_demo', credits: 100_000, keys: [{ key: DEMO_BFL_KEY, status: 'active' }] }],
  auth: { get_result_requires_key: false },
  // Credits (1 credit = $0.01) from docs.bfl.ml/quick_start/pricing and BFL's skill docs.
  models: {
    'flux-pro-1.1': model(4, [4, 8]),
    'flux-pro-1.1-ultra': model(6, [8, 14]),
    'flux-dev': model(2.5, [3, 6]),
    'flux-kontext-pro': model(4, [5, 9]),
    'flux-kontext-max': model(8, [8, 14], 6),
    'flux-2-pro': model({ first_mp: 3, extra_mp: 1.5, input_mp: 1.5 }, [6, 12]),
    'flux-2-max': model({ first_mp: 7, extra_mp: 3, input_mp: 3 }, [10, 20]),
    'flux-2-flex': model({ first_mp: 5, extra_mp: 5, input_mp: 5 }, [15, 30]),
    'flux-2-klein-4b': model({ first_mp: 1.4, extra_mp: 0.1, input_mp: 0.1 }, [1, 3]),
    'flux-2-klein-9b': model({ first_mp: 1.5, extra_mp: 0.2, input_mp: 0.2 }, [2, 4]),
  },
  generation: {
    queue_seconds: [0, 2],
    failure_rate: 0,
    request_moderation_words: ['forbidden'],
    content_moderation_words: ['unseemly'],
    request_moderation_rate: 0,
    content_moderation_rate: 0,
    max_megapixels: 4,
    input_mp_per_image: 1,
    extra_fields: 'ignore',
  },
  limits: { active_tasks: 24, scope: 'account', retry_after_seconds: null },
  sample: { url_ttl_seconds: 600, expired_status: 403, resign_on_poll: false },
  task_retention_seconds: 86_400,
  task_not_found_status: 200,
  billing: { charge_errors: false },
  webhooks: {
    payload: 'get_result',
    submit_answer: 'webhook_response',
    signature: 'hmac_sha256',
    timeout_seconds: 30,
    retry_seconds: [1, 5, 30],
  },
  faults: {
    server_error_rate: { submit: 0, get_result: 0, delivery: 0, credits: 0 },
    truncate_download_rate: 0,
    slow_download_kbps: 0,
    webhook_duplicate_rate: 0,
    webhook_lost_rate: 0,
    stuck_task_rate: 0,
    lost_submit_response_rate: 0,
  },
} satisfies BflConfig);

const SPEC: ConfigSpec<BflConfig> = {
  provider: 'bfl',
  defaults: DEFAULT_BFL_CONFIG,
  schema: BflConfigSchema as z.ZodType<BflConfig, unknown>,
  secretParents: ['accounts'],
  extraProblems: duplicateAccountProblems,
};

const loaders = configLoaders(SPEC);
/** For config objects (tests, benchmarks): merged over the defaults, then validated. */
export const parseBflConfig = loaders.parse;
/** Reads a YAML config file; every problem is reported as `file:line:col path: message`. */
export const loadBflConfig = loaders.load;
/** Parses YAML text; `file` only names the source in problems. */
export const parseBflConfigText = loaders.parseText;

/**
 * A change of the limits of a running emulator (PUT /_emulator/limits): fields left out keep
 * their value; `max_active: null` leaves only the overall limit for that model.
 */
export const LimitsChangeSchema = z.strictObject({
  active_tasks: z.number().int().min(1).optional(),
  retry_after_seconds: z.number().int().min(0).nullable().optional(),
  max_active: z
    .strictObject(
      Object.fromEntries(
        BFL_MODELS.map((name) => [name, z.number().int().min(1).nullable().optional()]),
      ) as Record<BflModel, z.ZodOptional<z.ZodNullable<z.ZodNumber>>>,
    )
    .optional(),
});
export type LimitsChange = z.input<typeof LimitsChangeSchema>;

/** The limits in force, as GET/PUT /_emulator/limits show them. */
export interface BflLimits {
  active_tasks: number;
  scope: BflConfig['limits']['scope'];
  retry_after_seconds: number | null;
  max_active: Partial<Record<BflModel, number>>;
}

export function validateLimitsChange(input: unknown): {
  change?: z.output<typeof LimitsChangeSchema>;
  problems: string[];
} {
  return validateChange(LimitsChangeSchema, input);
}
