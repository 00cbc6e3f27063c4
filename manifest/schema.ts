// The manifest's shape: what a catalog team writes. This zod schema is the single source of truth
// for validation, for the normalized items the run works from, and for manifests/manifest.schema.json
// (generated from it for editors).
import { z } from 'zod';
import { providerNamed } from '../providers/registry.js';
import { DEFAULT_PROVIDER, PROVIDER_NAMES } from '../providers/types.js';
import { isS3Url, parseS3Url } from '../storage/s3-location.js';
import { parseDeadline, parseDuration } from './durations.js';
import { CHECK_NAMES, type CheckName } from '../checks/image-checks.js';
import { ItemParamsSchema, ItemSchema, VariantSchema } from './item-schema.js';
import { NotifySchema } from './notify.js';

export {
  ITEM_ID_PATTERN,
  ItemParamsSchema,
  ItemSchema,
  MAX_PROMPT_CHARS,
  VariantSchema,
  type ItemParams,
  type ManifestItem,
  type ManifestVariant,
} from './item-schema.js';

export const MANIFEST_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/;
/** `{variant}` only in a manifest with variants (ManifestSchema checks it). */
export const PATH_TEMPLATE_FIELDS = ['id', 'index', 'ext', 'name', 'size', 'resolution', 'variant'] as const;
export const DEFAULT_PATH_TEMPLATE = '{id}_{index}.{ext}';
/** The run's state folder inside the output: plan, outcomes, submit journal. */
export const STATE_DIR_NAME = '.pixelmill';

/** What `api.api_key_env` may be: an environment variable's name, as shells and .env files write them. */
export const ENV_VAR_NAME_PATTERN = /^[A-Z_][A-Z0-9_]*$/;

/**
 * A key pasted where its variable's name belongs: a usual key prefix (sk-, sk_live_, pk_, ...), or
 * a long run of letters and digits mixed, which variable names (words joined by "_") do not have.
 */
export function looksLikeApiKey(value: string): boolean {
  if (/^(sk|pk|rk)[-_]/.test(value)) return true;
  return value.split(/[-_]/).some((part) => part.length >= 16 && /\d/.test(part) && /[a-z]/i.test(part));
}

/** A task given up sooner could not have finished even at the provider's fastest. */
const MIN_TASK_TIMEOUT_MS = 10_000;

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/** Calls per second: a positive number, or `auto` (discovered from the provider's answers). */
const callRate = z.union([z.literal('auto'), z.number().gt(0).max(10_000)], {
  error: (issue) =>
    typeof issue.input === 'number' && issue.input > 10_000
      ? 'must be at most 10000 calls per second'
      : `must be "auto" or a positive number of calls per second, not ${JSON.stringify(issue.input)}`,
});

const pathTemplate = z
  .string()
  .min(1)
  .superRefine((template, ctx) => {
    for (const [, field] of template.matchAll(/\{([^}]*)\}/g)) {
      if (!(PATH_TEMPLATE_FIELDS as readonly string[]).includes(field ?? '')) {
        ctx.addIssue({
          code: 'custom',
          message: `unknown placeholder {${field}}; use ${PATH_TEMPLATE_FIELDS.map((f) => `{${f}}`).join(', ')}`,
        });
      }
    }
    if (!template.includes('{id}')) ctx.addIssue({ code: 'custom', message: 'must contain {id}' });
    if (!template.includes('{index}')) ctx.addIssue({ code: 'custom', message: 'must contain {index}' });
    if (template.startsWith('/') || template.split('/').includes('..')) {
      ctx.addIssue({ code: 'custom', message: 'must be a relative path inside the output directory' });
    }
    // No file system takes NUL, and control characters make names no one can type or see.
    if (/[\u0000-\u001f\u007f]/.test(template)) {
      ctx.addIssue({
        code: 'custom',
        message: 'must not contain control characters (NUL, tab, newline, ...)',
      });
    }
    const first = template.split('/').find((part) => part !== '' && part !== '.');
    if (first === STATE_DIR_NAME) {
      ctx.addIssue({
        code: 'custom',
        message: `must not write into ${STATE_DIR_NAME}/, the run's state folder (plan, submit journal)`,
      });
    }
  });

/** A local directory, or `s3://bucket/prefix` for an S3-compatible object store. */
const outputDir = z
  .string()
  .min(1)
  .superRefine((dir, ctx) => {
    if (!isS3Url(dir)) return;
    const parsed = parseS3Url(dir);
    if ('problems' in parsed)
      for (const message of parsed.problems) ctx.addIssue({ code: 'custom', message });
  });

/** Connection settings of an S3 output. Never credentials: those come from the AWS environment. */
const S3_OUTPUT_OPTIONS = ['endpoint', 'region', 'force_path_style', 'local_dir'] as const;

export const OutputSchema = z.union([
  outputDir,
  z
    .strictObject({
      dir: outputDir,
      path_template: pathTemplate.optional(),
      allow_non_empty: z.boolean().optional(),
      endpoint: httpUrl
        .refine(
          (url) => new URL(url).username === '' && new URL(url).password === '',
          'must not contain credentials (they come from the AWS environment or profile)',
        )
        .optional(),
      region: z
        .string()
        .regex(/^[a-z0-9-]{1,40}$/, 'must be a region name like "eu-west-1"')
        .optional(),
      force_path_style: z.boolean().optional(),
      local_dir: z.string().min(1).optional(),
      public_url: httpUrl
        .refine((url) => !/[?#]/.test(url), 'must have no query or fragment (file names are appended)')
        .optional(),
    })
    .superRefine((output, ctx) => {
      if (isS3Url(output.dir)) {
        if (output.public_url !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['public_url'],
            message: 'only applies to a local output (an s3:// output gives the provider presigned URLs)',
          });
        return;
      }
      for (const key of S3_OUTPUT_OPTIONS) {
        if (output[key] !== undefined) {
          ctx.addIssue({ code: 'custom', path: [key], message: 'only applies to an s3:// output' });
        }
      }
    }),
]);

/** Terminal-state webhooks (the fast path): the receiver's public address and its secret's env var. */
export const WebhooksSchema = z.strictObject({
  enabled: z.boolean().optional(),
  public_url: httpUrl
    .refine((url) => !/[?#]/.test(url), 'must have no query or fragment (the callback path is appended)')
    .optional(),
  secret_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable (not the secret itself)')
    .optional(),
});

const price = z.number().min(0).max(1_000_000);

/**
 * `limits.budget_credits`: an amount in the provider's unit (US dollars for openai), as a user
 * writes money: `40` or `12.50` (a currency sign makes it text, which validate says how to write).
 */
const budgetAmount = z
  .number()
  .positive()
  .max(1_000_000_000)
  .refine((value) => Math.abs(value * 100 - Math.round(value * 100)) < 1e-6, {
    message:
      "must have at most two decimals (cents): an amount in the provider's unit, US dollars for openai",
  });
/**
 * What an image costs, in the unit of `budget_credits`, for providers that report no cost (fal,
 * Replicate): one price, one per resolution, or one per megapixel. Providers that report their
 * cost (the first API, BFL) are charged as reported; this is then only `plan`'s estimate.
 */
export const PricingSchema = z
  .strictObject({
    per_image: z.union([price, z.strictObject({ '1K': price, '2K': price, '4K': price })]).optional(),
    per_megapixel: price.optional(),
  })
  .refine((pricing) => (pricing.per_image === undefined) !== (pricing.per_megapixel === undefined), {
    message: 'set one of per_image and per_megapixel',
  });

export const ManifestSchema = z
  .strictObject({
    name: z
      .string()
      .regex(MANIFEST_NAME_PATTERN, 'must be 1-80 characters of letters, digits, ".", "_" or "-"'),
    description: z.string().optional(),
    api: z
      .strictObject({
        provider: z.enum(PROVIDER_NAMES).optional(),
        base_url: httpUrl.optional(),
        api_key_env: z
          .string()
          // Checked first, and never echoed: a key pasted here must not reach history or reports.
          .refine(
            (value) => !looksLikeApiKey(value),
            'looks like an API key, not the name of a variable: put the key in an environment variable and name that variable here',
          )
          .regex(
            ENV_VAR_NAME_PATTERN,
            'must be the name of an environment variable: capital letters, digits and "_" (not the key itself)',
          )
          .optional(),
        mode: z.enum(['batch', 'sync']).optional(),
        max_enqueued_images: z.number().int().min(1).max(10_000_000).optional(),
        retry_in: z.enum(['batch', 'sync']).optional(),
        poll_interval: z
          .string()
          .refine((text) => parseDuration(text) !== undefined, 'must be a duration such as "30s" or "2m"')
          .optional(),
      })
      .superRefine((api, ctx) => {
        // Only a provider that offers several ways of submitting (OpenAI) has a mode to choose.
        if (providerNamed(api.provider).capabilities.submission) return;
        const provider = api.provider ?? DEFAULT_PROVIDER;
        for (const field of ['mode', 'max_enqueued_images', 'retry_in', 'poll_interval'] as const)
          if (api[field] !== undefined)
            ctx.addIssue({
              code: 'custom',
              path: [field],
              message: `${provider} has one way of submitting (tasks): remove it, or use provider openai`,
            });
      })
      .optional(),
    defaults: ItemParamsSchema.optional(),
    limits: z
      .strictObject({
        requests_per_second: callRate.optional(),
        submits_per_second: callRate.optional(),
        queries_per_second: callRate.optional(),
        max_in_flight: z.number().int().min(1).max(100_000).optional(),
        budget_credits: budgetAmount.optional(),
        task_timeout: z
          .string()
          .refine(
            (text) => parseDuration(text) !== undefined,
            'must be a duration such as "90s", "30m" or "2h"',
          )
          .refine((text) => (parseDuration(text) ?? 0) >= MIN_TASK_TIMEOUT_MS, 'must be at least 10s')
          .optional(),
        deadline: z
          .string()
          .superRefine((text, ctx) => {
            const deadline = parseDeadline(text);
            if (deadline === undefined) {
              ctx.addIssue({
                code: 'custom',
                message:
                  'must be a duration from the start such as "8h", or a time such as "2026-11-24T08:00:00+01:00"',
              });
            } else if ('atMs' in deadline && deadline.atMs <= Date.now()) {
              ctx.addIssue({
                code: 'custom',
                message: `is in the past (${new Date(deadline.atMs).toISOString()})`,
              });
            }
          })
          .optional(),
      })
      .optional(),
    output: OutputSchema.optional(),
    retry: z
      .strictObject({
        max_attempts: z.number().int().min(1).max(20).optional(),
        on: z.array(z.string().min(1)).optional(),
      })
      .optional(),
    checks: z
      .strictObject(
        Object.fromEntries(
          CHECK_NAMES.map((name) => [name, z.enum(['error', 'warn', 'off']).optional()]),
        ) as Record<CheckName, z.ZodOptional<z.ZodEnum<{ error: 'error'; warn: 'warn'; off: 'off' }>>>,
      )
      .optional(),
    webhooks: WebhooksSchema.optional(),
    notify: NotifySchema.optional(),
    pricing: PricingSchema.optional(),
    variants: z.array(VariantSchema).min(1).optional(),
    items: z.array(ItemSchema).optional(),
    items_file: z.string().min(1).optional(),
  })
  .superRefine((manifest, ctx) => {
    const output = manifest.output;
    if (typeof output === 'object' && output.path_template?.includes('{variant}') && !manifest.variants) {
      ctx.addIssue({
        code: 'custom',
        path: ['output', 'path_template'],
        message: '{variant} needs `variants`: without them no item has a variant',
      });
    }
    const variantAt = new Map<string, number>();
    manifest.variants?.forEach((variant, k) => {
      const first = variantAt.get(variant.id);
      if (first === undefined) return variantAt.set(variant.id, k);
      ctx.addIssue({
        code: 'custom',
        path: ['variants', k, 'id'],
        message: `duplicate variant id "${variant.id}" (first at variants[${first}])`,
      });
    });
    if (!manifest.items?.length && !manifest.items_file) {
      ctx.addIssue({
        code: 'custom',
        path: ['items'],
        message: 'the manifest needs `items` or `items_file`',
      });
    }
  });
export type Manifest = z.infer<typeof ManifestSchema>;
