// The shape of what makes one output: an item, the parameters `defaults` and variants give every
// item, and the variants themselves (named blocks applied to every item, or to those their
// `where` selects). manifest/schema.ts puts them in the manifest; manifest/expand.ts combines them.
import { z } from 'zod';
import { LANGUAGES, MAX_IMAGE_URLS, RESOLUTIONS } from '../common/generation.js';

/** Item ids end up in file names and workflow ids: keep them to a portable character set. */
export const ITEM_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** A variant's id ends each of its outputs' ids (`<item>-<variant>`): the same characters, shorter. */
export const VARIANT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const MAX_PROMPT_CHARS = 32_000;
/** An aspect ratio (`16:9`) or `auto`. */
export const SIZE_PATTERN = /^(\d{1,3}:\d{1,3}|auto)$/;

const scalar = z.union([z.string(), z.number(), z.boolean()], {
  error: 'must be text, a number or true/false',
});

/**
 * Values templates may name (`{style}`), besides the item's fields. A name that is an item field
 * is refused: one name, one meaning.
 */
export const VariablesSchema = z.record(z.string().min(1), scalar).superRefine((variables, ctx) => {
  for (const name of Object.keys(variables)) {
    if (ITEM_FIELD_NAMES.has(name)) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `is an item field, not a variable: set it as the field "${name}"`,
      });
    } else if (/[{}]/.test(name)) {
      ctx.addIssue({ code: 'custom', path: [name], message: 'a variable name has no braces' });
    }
  }
});

/** Generation parameters an item may set, or inherit from a variant or `defaults`. */
export const ItemParamsSchema = z.strictObject({
  /** Makes the prompt from the item's fields and variables (manifest/template.ts). */
  prompt_template: z
    .string()
    .max(MAX_PROMPT_CHARS, `must be at most ${MAX_PROMPT_CHARS} characters`)
    .refine((template) => template.trim().length > 0, 'must not be empty')
    .optional(),
  model: z.string().min(1).optional(),
  size: z.string().regex(SIZE_PATTERN, 'must be an aspect ratio like "16:9" (or "auto")').optional(),
  resolution: z.enum(RESOLUTIONS).optional(),
  n: z.number().int().min(1).max(10).optional(),
  /** http(s) URLs, or local image files and globs (manifest/references.ts checks them). */
  image_urls: z.array(z.string().min(1, 'must not be empty')).max(MAX_IMAGE_URLS).optional(),
  language: z.enum(LANGUAGES).optional(),
  /**
   * The provider's own input fields (`guidance_scale`, `safety_tolerance`, ...), passed through
   * after pixelmill's mapping; merged over `defaults.params` key by key.
   */
  params: z.record(z.string(), z.unknown()).optional(),
});
export type ItemParams = z.infer<typeof ItemParamsSchema>;

export const ItemSchema = ItemParamsSchema.extend({
  id: z
    .string()
    .regex(
      ITEM_ID_PATTERN,
      'must be 1-128 characters of letters, digits, ".", "_" or "-", starting with a letter or digit',
    )
    .optional(),
  /** Required unless a prompt_template (the item's, its variant's or the defaults') makes it. */
  prompt: z
    .string()
    .max(MAX_PROMPT_CHARS, `must be at most ${MAX_PROMPT_CHARS} characters`)
    .refine((prompt) => prompt.trim().length > 0, 'must not be empty')
    .optional(),
  variables: VariablesSchema.optional(),
});
export type ManifestItem = z.infer<typeof ItemSchema>;

/** The names of an item's fields: a CSV column or JSONL key of another name is a variable. */
export const ITEM_FIELD_NAMES: ReadonlySet<string> = new Set([
  ...Object.keys(ItemParamsSchema.shape),
  'id',
  'prompt',
  'variables',
]);

export const VariantSchema = ItemParamsSchema.extend({
  id: z
    .string()
    .regex(
      VARIANT_ID_PATTERN,
      'must be 1-64 characters of letters, digits, ".", "_" or "-", starting with a letter or digit',
    ),
  variables: VariablesSchema.optional(),
  /**
   * The items the variant applies to: each key a column (an item field or variable), each value
   * the value (or one of the values) the item must have there. Absent: every item.
   */
  where: z
    .record(z.string().min(1), z.union([scalar, z.array(scalar).min(1, 'must list at least one value')]))
    .optional(),
});
export type ManifestVariant = z.infer<typeof VariantSchema>;
