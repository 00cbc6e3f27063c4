// The input of fal's FLUX text-to-image endpoints (fal-ai/flux/dev's schema: prompt, image_size as
// a preset or {width, height}, num_images, seed, output_format, enable_safety_checker, sync_mode,
// num_inference_steps, guidance_scale, acceleration), validated as the model's pydantic schema
// does: every problem listed, unknown fields ignored, null as absent for optional fields.
//
// fal validates on the runner, not at submit: an invalid input is accepted by the queue and the
// request then completes with the model's 422 (detail: [{loc, msg, type, ...}]), which is what the
// result call and the webhook carry (docs.fal.ai, webhooks: "Invalid status code: 422").

export const IMAGE_SIZE_PRESETS = {
  square_hd: [1024, 1024],
  square: [512, 512],
  portrait_4_3: [768, 1024],
  portrait_16_9: [576, 1024],
  landscape_4_3: [1024, 768],
  landscape_16_9: [1024, 576],
} as const satisfies Record<string, readonly [number, number]>;
export type ImageSizePreset = keyof typeof IMAGE_SIZE_PRESETS;

export const OUTPUT_FORMATS = ['jpeg', 'png'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
const ACCELERATIONS = ['none', 'regular', 'high'] as const;

/** fal's ImageSize bounds each side; the emulator also refuses more pixels than it will draw. */
export const MAX_SIDE = 14_142;
export const MAX_PIXELS = 4096 * 4096;

export interface FluxInput {
  prompt: string;
  width: number;
  height: number;
  numImages: number;
  /** null: the model picks one (drawn at submit). */
  seed: number | null;
  outputFormat: OutputFormat;
  safetyChecker: boolean;
  syncMode: boolean;
}

/** One pydantic-style validation error, as fal's 422 `detail` lists them. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  url: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

const issue = (
  loc: (string | number)[],
  type: string,
  msg: string,
  input?: unknown,
  ctx?: Record<string, unknown>,
): ValidationIssue => ({
  loc: ['body', ...loc],
  msg,
  type,
  url: `https://docs.fal.ai/errors#${type}`,
  ...(input === undefined ? {} : { input }),
  ...(ctx ? { ctx } : {}),
});

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function integer(
  fields: Record<string, unknown>,
  name: string,
  fallback: number,
  min: number,
  max: number,
  issues: ValidationIssue[],
  loc: (string | number)[] = [name],
): number {
  const value = fields[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    issues.push(issue(loc, 'int_type', 'Input should be a valid integer', value));
    return fallback;
  }
  if (value < min)
    issues.push(
      issue(loc, 'greater_than_equal', `Input should be greater than or equal to ${min}`, value, { ge: min }),
    );
  else if (value > max)
    issues.push(
      issue(loc, 'less_than_equal', `Input should be less than or equal to ${max}`, value, { le: max }),
    );
  return value;
}

function literal<T extends string>(
  fields: Record<string, unknown>,
  name: string,
  allowed: readonly T[],
  fallback: T,
  issues: ValidationIssue[],
): T {
  const value = fields[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  const expected = allowed
    .map((a) => `'${a}'`)
    .join(', ')
    .replace(/, ([^,]*)$/, ' or $1');
  issues.push(issue([name], 'literal_error', `Input should be ${expected}`, value, { expected }));
  return fallback;
}

function boolean(
  fields: Record<string, unknown>,
  name: string,
  fallback: boolean,
  issues: ValidationIssue[],
): boolean {
  const value = fields[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'boolean') return value;
  issues.push(issue([name], 'bool_type', 'Input should be a valid boolean', value));
  return fallback;
}

function imageSize(value: unknown, issues: ValidationIssue[]): [number, number] {
  if (value === undefined || value === null) return [...IMAGE_SIZE_PRESETS.landscape_4_3];
  if (typeof value === 'string') {
    const preset = IMAGE_SIZE_PRESETS[value as ImageSizePreset] as readonly [number, number] | undefined;
    if (preset) return [...preset];
    const names = Object.keys(IMAGE_SIZE_PRESETS)
      .map((n) => `'${n}'`)
      .join(', ');
    issues.push(issue(['image_size'], 'literal_error', `Input should be ${names}`, value));
    return [1024, 768];
  }
  if (!isObject(value)) {
    issues.push(
      issue(
        ['image_size'],
        'model_type',
        'Input should be a valid dictionary or instance of ImageSize',
        value,
      ),
    );
    return [1024, 768];
  }
  const before = issues.length;
  const width = integer(value, 'width', 512, 1, MAX_SIDE, issues, ['image_size', 'width']);
  const height = integer(value, 'height', 512, 1, MAX_SIDE, issues, ['image_size', 'height']);
  if (issues.length === before && width * height > MAX_PIXELS)
    issues.push(issue(['image_size'], 'value_error', `Image too large: at most ${MAX_PIXELS} pixels`, value));
  return [width, height];
}

/** The validated input, or every issue found; `maxImages` is the model's num_images bound. */
export function validateFluxInput(
  body: unknown,
  maxImages: number,
): { input: FluxInput; issues: [] } | { input?: undefined; issues: ValidationIssue[] } {
  if (!isObject(body)) {
    return {
      issues: [issue([], 'model_attributes_type', 'Input should be a valid dictionary or object', body)],
    };
  }
  const issues: ValidationIssue[] = [];
  const prompt = body.prompt;
  if (prompt === undefined) issues.push(issue(['prompt'], 'missing', 'Field required'));
  else if (typeof prompt !== 'string')
    issues.push(issue(['prompt'], 'string_type', 'Input should be a valid string', prompt));
  const [width, height] = imageSize(body.image_size, issues);
  const numImages = integer(body, 'num_images', 1, 1, maxImages, issues);
  const seed =
    body.seed === undefined || body.seed === null
      ? null
      : integer(body, 'seed', 0, 0, Number.MAX_SAFE_INTEGER, issues);
  integer(body, 'num_inference_steps', 28, 1, 50, issues);
  const guidance = body.guidance_scale;
  if (guidance !== undefined && guidance !== null) {
    if (typeof guidance !== 'number')
      issues.push(issue(['guidance_scale'], 'float_type', 'Input should be a valid number', guidance));
    else if (guidance < 1 || guidance > 20)
      issues.push(
        issue(
          ['guidance_scale'],
          guidance < 1 ? 'greater_than_equal' : 'less_than_equal',
          `Input should be ${guidance < 1 ? 'greater than or equal to 1' : 'less than or equal to 20'}`,
          guidance,
        ),
      );
  }
  const outputFormat = literal(body, 'output_format', OUTPUT_FORMATS, 'jpeg', issues);
  literal(body, 'acceleration', ACCELERATIONS, 'none', issues);
  const safetyChecker = boolean(body, 'enable_safety_checker', true, issues);
  const syncMode = boolean(body, 'sync_mode', false, issues);
  if (issues.length > 0) return { issues };
  return {
    input: {
      prompt: prompt as string,
      width,
      height,
      numImages,
      seed,
      outputFormat,
      safetyChecker,
      syncMode,
    },
    issues: [],
  };
}
