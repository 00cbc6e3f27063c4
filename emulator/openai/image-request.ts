// The body of POST /v1/images/generations, checked as the Images API reference describes it for
// the GPT image models, the same way for a sync call and a batch line: `model`, `prompt`
// (required), `n` 1-10, `size`, `quality`, `output_format`, `background`, `output_compression`
// 0-100 (jpeg and webp only), `moderation`, `user`. The first problem is a 400
// invalid_request_error naming its `param`, as the API answers. Token usage follows the image
// token table of the image generation guide (output tokens by quality and size).
import {
  invalidRequest,
  invalidType,
  invalidValue,
  missingParameter,
  type OpenAIApiError,
} from './errors.js';

export const SIZES = ['1024x1024', '1536x1024', '1024x1536', 'auto'] as const;
export const QUALITIES = ['low', 'medium', 'high', 'auto'] as const;
export const OUTPUT_FORMATS = ['png', 'jpeg', 'webp'] as const;
export const BACKGROUNDS = ['transparent', 'opaque', 'auto'] as const;
export const MODERATIONS = ['low', 'auto'] as const;

export type ImageSize = Exclude<(typeof SIZES)[number], 'auto'>;
export type ImageQuality = Exclude<(typeof QUALITIES)[number], 'auto'>;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** A checked request, `auto` values resolved as the answer reports them. */
export interface ImageRequest {
  model: string;
  prompt: string;
  n: number;
  size: ImageSize;
  quality: ImageQuality;
  format: OutputFormat;
  background: 'transparent' | 'opaque';
}

const KNOWN = new Set([
  'model',
  'prompt',
  'n',
  'size',
  'quality',
  'output_format',
  'background',
  'output_compression',
  'moderation',
  'user',
  'stream',
  'partial_images',
]);
const MAX_PROMPT_CHARACTERS = 32_000;
const MAX_IMAGES = 10;

function enumField<T extends string>(
  body: Record<string, unknown>,
  param: string,
  values: readonly T[],
  fallback: T,
): T | OpenAIApiError {
  const value = body[param];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string') return invalidType(param, 'one of the supported strings', value);
  return (values as readonly string[]).includes(value) ? (value as T) : invalidValue(param, value, values);
}

function integerField(
  body: Record<string, unknown>,
  param: string,
  [min, max]: [number, number],
  fallback: number,
): number | OpenAIApiError {
  const value = body[param];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value)) return invalidType(param, 'an integer', value);
  if (value < min)
    return invalidRequest(
      `Invalid '${param}': integer below minimum value. Expected a value >= ${min}, but got ${value} instead.`,
      param,
      'integer_below_min_value',
    );
  if (value > max)
    return invalidRequest(
      `Invalid '${param}': integer above maximum value. Expected a value <= ${max}, but got ${value} instead.`,
      param,
      'integer_above_max_value',
    );
  return value;
}

export function checkImageRequest(body: unknown, models: readonly string[]): ImageRequest | OpenAIApiError {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return invalidRequest('The body of the request must be a JSON object.', null, 'invalid_type');
  const fields = body as Record<string, unknown>;
  for (const key of Object.keys(fields))
    if (!KNOWN.has(key)) return invalidRequest(`Unknown parameter: '${key}'.`, key, 'unknown_parameter');
  const model = fields.model ?? models[0];
  if (typeof model !== 'string') return invalidType('model', 'a string', model);
  if (!models.includes(model)) return invalidValue('model', model, models);
  const prompt = fields.prompt;
  if (prompt === undefined || prompt === null) return missingParameter('prompt');
  if (typeof prompt !== 'string') return invalidType('prompt', 'a string', prompt);
  if (prompt.length === 0)
    return invalidRequest(
      "Invalid 'prompt': empty string. Expected a string with minimum length 1, but got an empty string instead.",
      'prompt',
      'empty_string',
    );
  if (prompt.length > MAX_PROMPT_CHARACTERS)
    return invalidRequest(
      `Invalid 'prompt': string too long. Expected a string with maximum length ${MAX_PROMPT_CHARACTERS}, but got a string with length ${prompt.length} instead.`,
      'prompt',
      'string_above_max_length',
    );
  if (fields.stream === true)
    return invalidRequest('Streaming is not supported by this emulator.', 'stream', 'invalid_value');
  const n = integerField(fields, 'n', [1, MAX_IMAGES], 1);
  if (typeof n !== 'number') return n;
  const size = enumField(fields, 'size', SIZES, 'auto');
  if (typeof size !== 'string') return size;
  const quality = enumField(fields, 'quality', QUALITIES, 'auto');
  if (typeof quality !== 'string') return quality;
  const format = enumField(fields, 'output_format', OUTPUT_FORMATS, 'png');
  if (typeof format !== 'string') return format;
  const background = enumField(fields, 'background', BACKGROUNDS, 'auto');
  if (typeof background !== 'string') return background;
  const moderation = enumField(fields, 'moderation', MODERATIONS, 'auto');
  if (typeof moderation !== 'string') return moderation;
  const compression = integerField(fields, 'output_compression', [0, 100], 100);
  if (typeof compression !== 'number') return compression;
  if (compression < 100 && format === 'png')
    return invalidRequest(
      'Compression less than 100 is not supported for PNG output format.',
      'output_compression',
      'invalid_value',
    );
  if (background === 'transparent' && format === 'jpeg')
    return invalidRequest(
      'Transparent background is not supported for JPEG output format. Use png or webp.',
      'background',
      'invalid_value',
    );
  if (fields.user !== undefined && typeof fields.user !== 'string')
    return invalidType('user', 'a string', fields.user);
  return {
    model,
    prompt,
    n,
    // `auto` lets the model choose; the emulator always chooses the square size and medium quality.
    size: size === 'auto' ? '1024x1024' : size,
    quality: quality === 'auto' ? 'medium' : quality,
    format,
    background: background === 'transparent' ? 'transparent' : 'opaque',
  };
}

/** Output tokens of one image (the image generation guide's table). */
const OUTPUT_TOKENS: Record<ImageQuality, Record<ImageSize, number>> = {
  low: { '1024x1024': 272, '1024x1536': 408, '1536x1024': 400 },
  medium: { '1024x1024': 1056, '1024x1536': 1584, '1536x1024': 1568 },
  high: { '1024x1024': 4160, '1024x1536': 6240, '1536x1024': 6208 },
};

export function outputTokens(request: ImageRequest): number {
  return OUTPUT_TOKENS[request.quality][request.size] * request.n;
}

export interface ImageUsage {
  input_tokens: number;
  input_tokens_details: { image_tokens: number; text_tokens: number };
  output_tokens: number;
  total_tokens: number;
}

/** Usage as the answer reports it; text tokens estimated at four characters each. */
export function usageOf(request: ImageRequest): ImageUsage {
  const text = Math.max(1, Math.ceil(request.prompt.length / 4));
  const output = outputTokens(request);
  return {
    input_tokens: text,
    input_tokens_details: { image_tokens: 0, text_tokens: text },
    output_tokens: output,
    total_tokens: text + output,
  };
}

export function dimensions(size: ImageSize): { width: number; height: number } {
  const [width, height] = size.split('x').map(Number) as [number, number];
  return { width, height };
}

/** A prompt containing one of `words` (case-insensitive). */
export function hasBlockedWord(prompt: string, words: readonly string[]): boolean {
  const lower = prompt.toLowerCase();
  return words.some((word) => lower.includes(word.toLowerCase()));
}
