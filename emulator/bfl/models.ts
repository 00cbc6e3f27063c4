// The FLUX models the emulator serves at `POST /v1/{model}`, each with its own input model as
// BFL's OpenAPI document (api.bfl.ai/openapi.json) declares it: FluxPro11Inputs, FluxDevInputs,
// FluxUltraInput, FluxKontextProInputs, Flux2Inputs, Flux2FlexInputs, Flux2KleinInputs. Fields are
// listed in the document's order, which is the order pydantic reports problems in.
//
// Also here: the size of the image each model makes from a validated input, since width/height,
// aspect_ratio or neither decide it depending on the model.
import { parseRatio, type FieldDecl, type InputModel, type ValidatedInput } from './validation.js';

export const BFL_MODELS = [
  'flux-pro-1.1',
  'flux-pro-1.1-ultra',
  'flux-dev',
  'flux-kontext-pro',
  'flux-kontext-max',
  'flux-2-pro',
  'flux-2-max',
  'flux-2-flex',
  'flux-2-klein-4b',
  'flux-2-klein-9b',
] as const;
export type BflModel = (typeof BFL_MODELS)[number];

export function isBflModel(name: string): name is BflModel {
  return (BFL_MODELS as readonly string[]).includes(name);
}

const OUTPUT_FORMATS = ['jpeg', 'png', 'webp'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

const nullableString: FieldDecl = { kind: 'string', nullable: true };
const seed: FieldDecl = { kind: 'int', nullable: true };
const promptUpsampling: FieldDecl = { kind: 'bool', default: false };
const outputFormat = (fallback: OutputFormat): FieldDecl => ({
  kind: 'enum',
  values: OUTPUT_FORMATS,
  nullable: true,
  default: fallback,
});
const safety = (le: number): FieldDecl => ({ kind: 'int', ge: 0, le, default: 2 });
const webhookUrl: FieldDecl = { kind: 'http_url', nullable: true };
const webhookSecret: FieldDecl = { kind: 'string', nullable: true, secret: true };
/** FLUX.1 [pro]/[dev] sizes: 256 to 1440 in steps of 32. */
const flux1Side = (fallback: number): FieldDecl => ({
  kind: 'int',
  ge: 256,
  le: 1440,
  multipleOf: 32,
  default: fallback,
});
/** FLUX.2 sizes: at least 64, 0 (the default) meaning "choose for me". */
const flux2Side: FieldDecl = { kind: 'int', nullable: true, ge: 64, default: 0 };
const ratio = (fallback: string | null): FieldDecl => ({
  kind: 'aspect_ratio',
  nullable: fallback === null,
  default: fallback,
  min: 9 / 21,
  max: 21 / 9,
});
const inputImages = (count: number): [string, FieldDecl][] =>
  Array.from({ length: count }, (_, i) => [i === 0 ? 'input_image' : `input_image_${i + 1}`, nullableString]);

const FLUX_PRO_11: InputModel = [
  ['prompt', { kind: 'string', nullable: true, default: '' }],
  ['image_prompt', nullableString],
  ['width', flux1Side(1024)],
  ['height', flux1Side(768)],
  ['prompt_upsampling', promptUpsampling],
  ['seed', seed],
  ['safety_tolerance', safety(6)],
  ['output_format', outputFormat('jpeg')],
  ['webhook_url', webhookUrl],
  ['webhook_secret', webhookSecret],
];

const FLUX_DEV: InputModel = [
  ['prompt', { kind: 'string', default: '' }],
  ['image_prompt', nullableString],
  ['width', flux1Side(1024)],
  ['height', flux1Side(768)],
  ['steps', { kind: 'int', nullable: true, ge: 1, le: 50, default: 28 }],
  ['prompt_upsampling', promptUpsampling],
  ['seed', seed],
  ['guidance', { kind: 'number', nullable: true, ge: 1.5, le: 5, default: 3 }],
  ['safety_tolerance', safety(6)],
  ['output_format', outputFormat('jpeg')],
  ['webhook_url', webhookUrl],
  ['webhook_secret', webhookSecret],
];

const FLUX_ULTRA: InputModel = [
  ['prompt', { kind: 'string', nullable: true, default: '' }],
  ['prompt_upsampling', promptUpsampling],
  ['seed', seed],
  ['aspect_ratio', ratio('16:9')],
  ['safety_tolerance', safety(6)],
  ['output_format', outputFormat('jpeg')],
  ['raw', { kind: 'bool', default: false }],
  ['image_prompt', nullableString],
  ['image_prompt_strength', { kind: 'number', ge: 0, le: 1, default: 0.1 }],
  ['webhook_url', webhookUrl],
  ['webhook_secret', webhookSecret],
];

const FLUX_KONTEXT: InputModel = [
  ['prompt', { kind: 'string', required: true }],
  ...inputImages(4),
  ['seed', seed],
  ['aspect_ratio', ratio(null)],
  ['output_format', outputFormat('png')],
  ['webhook_url', webhookUrl],
  ['webhook_secret', webhookSecret],
  ['prompt_upsampling', promptUpsampling],
  ['safety_tolerance', safety(6)],
];

const FLUX_2: InputModel = [
  ['prompt', { kind: 'string', required: true }],
  ...inputImages(8),
  ['seed', seed],
  ['width', flux2Side],
  ['height', flux2Side],
  ['safety_tolerance', safety(5)],
  ['output_format', outputFormat('jpeg')],
  ['webhook_url', webhookUrl],
  ['webhook_secret', webhookSecret],
];

const FLUX_2_FLEX: InputModel = [
  ['prompt', { kind: 'string', required: true }],
  ['prompt_upsampling', { kind: 'bool', nullable: true, default: true }],
  ...inputImages(8),
  ['seed', seed],
  ['width', flux2Side],
  ['height', flux2Side],
  ['guidance', { kind: 'number', nullable: true, ge: 1.5, le: 10, default: 5 }],
  ['steps', { kind: 'int', nullable: true, ge: 1, le: 50, default: 50 }],
  ['safety_tolerance', safety(5)],
  ['output_format', outputFormat('jpeg')],
  ['webhook_url', webhookUrl],
  ['webhook_secret', webhookSecret],
];

const FLUX_2_KLEIN: InputModel = [
  ['prompt', { kind: 'string', required: true }],
  ...inputImages(4),
  ['seed', seed],
  ['width', flux2Side],
  ['height', flux2Side],
  ['safety_tolerance', safety(5)],
  ['output_format', outputFormat('jpeg')],
  ['webhook_url', webhookUrl],
  ['webhook_secret', webhookSecret],
];

type SizeRule = 'width_height' | 'ultra_ratio' | 'kontext_ratio' | 'flux2';

interface ModelDef {
  readonly input: InputModel;
  readonly size: SizeRule;
  /** Billed per megapixel (FLUX.2) rather than per image. */
  readonly perMegapixel: boolean;
}

export const MODEL_DEFS: Record<BflModel, ModelDef> = {
  'flux-pro-1.1': { input: FLUX_PRO_11, size: 'width_height', perMegapixel: false },
  'flux-pro-1.1-ultra': { input: FLUX_ULTRA, size: 'ultra_ratio', perMegapixel: false },
  'flux-dev': { input: FLUX_DEV, size: 'width_height', perMegapixel: false },
  'flux-kontext-pro': { input: FLUX_KONTEXT, size: 'kontext_ratio', perMegapixel: false },
  'flux-kontext-max': { input: FLUX_KONTEXT, size: 'kontext_ratio', perMegapixel: false },
  'flux-2-pro': { input: FLUX_2, size: 'flux2', perMegapixel: true },
  'flux-2-max': { input: FLUX_2, size: 'flux2', perMegapixel: true },
  'flux-2-flex': { input: FLUX_2_FLEX, size: 'flux2', perMegapixel: true },
  'flux-2-klein-4b': { input: FLUX_2_KLEIN, size: 'flux2', perMegapixel: true },
  'flux-2-klein-9b': { input: FLUX_2_KLEIN, size: 'flux2', perMegapixel: true },
};

/** 2^20 pixels: BFL's megapixel (a 1024x1024 image is 1.00 MP; 1440x1440 is 1.98). */
export const MEGAPIXEL = 1024 * 1024;
/** FLUX1.1 [pro] Ultra makes about 4 MP, Kontext about 1 MP, at the asked aspect ratio. */
const ULTRA_PIXELS = 4 * MEGAPIXEL;
const KONTEXT_PIXELS = MEGAPIXEL;

export interface ImageSize {
  width: number;
  height: number;
}

/** Input images the request names (`input_image`, `input_image_2`, ...), in order. */
export function inputImagesOf(input: ValidatedInput): string[] {
  const images: string[] = [];
  for (let i = 1; i <= 8; i++) {
    const value = input[i === 1 ? 'input_image' : `input_image_${i}`];
    if (typeof value === 'string' && value !== '') images.push(value);
  }
  return images;
}

/**
 * The size of the image `model` makes for `input`, or a problem with the size a FLUX.2 request
 * asked for (`max_megapixels` exceeded). FLUX.2 sides are rounded down to a multiple of 16, as
 * its docs say sizes must be; 0 on a side means 1024.
 */
export function outputSizeOf(
  model: BflModel,
  input: ValidatedInput,
  maxMegapixels: number,
): { size: ImageSize } | { problem: string } {
  switch (MODEL_DEFS[model].size) {
    case 'width_height':
      return { size: { width: input.width as number, height: input.height as number } };
    case 'ultra_ratio':
      return { size: sizeForArea(String(input.aspect_ratio ?? '16:9'), ULTRA_PIXELS, 32) };
    case 'kontext_ratio':
      return { size: sizeForArea(String(input.aspect_ratio ?? '1:1'), KONTEXT_PIXELS, 32) };
    case 'flux2': {
      const side = (value: unknown): number => {
        const n = typeof value === 'number' && value > 0 ? value : 1024;
        return Math.max(64, Math.floor(n / 16) * 16);
      };
      const size = { width: side(input.width), height: side(input.height) };
      if (size.width * size.height > maxMegapixels * MEGAPIXEL)
        return {
          problem: `Requested image of ${size.width}x${size.height} is larger than ${maxMegapixels} megapixels`,
        };
      return { size };
    }
  }
}

function sizeForArea(aspectRatio: string, pixels: number, multiple: number): ImageSize {
  const { w, h } = parseRatio(aspectRatio) ?? { w: 1, h: 1 };
  const round = (n: number): number => Math.max(multiple, Math.round(n / multiple) * multiple);
  const width = Math.sqrt((pixels * w) / h);
  return { width: round(width), height: round((width * h) / w) };
}

/** Megapixels as BFL reports them (`input_mp`, `output_mp`): 2^20 pixels, two decimals. */
export function megapixels(size: ImageSize): number {
  return Math.round(((size.width * size.height) / MEGAPIXEL) * 100) / 100;
}
