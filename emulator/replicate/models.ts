// The models the emulator runs by default, and what a model's input asks of the images: how many,
// of which aspect ratio, in which file format.
//
// Input schemas are copied from the models' API pages (read 2026-11-26): black-forest-labs/
// flux-schnell and flux-1.1-pro (official), and stability-ai/sdxl (a community model run by version
// id; schema and version ids from replicate-python's recorded responses). Prices are the pages'
// (flux-schnell $0.003 an image, flux-1.1-pro $0.04 an image) or a GPU's per-second price (sdxl).
// The official models' version ids are the emulator's own: their API reports version "hidden".
import type { ModelConfig } from './config.js';

const FLUX_ASPECT_RATIOS = ['1:1', '16:9', '21:9', '3:2', '2:3', '4:5', '5:4', '3:4', '4:3', '9:16', '9:21'];
const FORMATS = ['webp', 'jpg', 'png'];

type Property = ModelConfig['input']['properties'][string];

const seed: Property = { type: 'integer' };
const prompt: Property = { type: 'string' };

export const DEFAULT_MODELS: ModelConfig[] = [
  {
    name: 'black-forest-labs/flux-schnell',
    official: true,
    versions: ['aa9ee7c4ad4e857e36944465f5b436dc7d592c97a6e8e7b160d60148eff469b6'],
    output: 'list',
    input: {
      required: ['prompt'],
      properties: {
        prompt,
        aspect_ratio: { type: 'string', enum: FLUX_ASPECT_RATIOS, default: '1:1' },
        num_outputs: { type: 'integer', minimum: 1, maximum: 4, default: 1 },
        num_inference_steps: { type: 'integer', minimum: 1, maximum: 4, default: 4 },
        seed,
        output_format: { type: 'string', enum: FORMATS, default: 'webp' },
        output_quality: { type: 'integer', minimum: 0, maximum: 100, default: 80 },
        disable_safety_checker: { type: 'boolean', default: false },
        go_fast: { type: 'boolean', default: true },
        megapixels: { type: 'string', enum: ['1', '0.25'], default: '1' },
      },
    },
    price: { per_image_usd: 0.003, per_second_usd: 0 },
  },
  {
    name: 'black-forest-labs/flux-1.1-pro',
    official: true,
    versions: ['4a41e11420f8405edbab517bb12ced0f8e4aeab88b1a81732519c67a64e360a2'],
    output: 'single',
    input: {
      required: ['prompt'],
      properties: {
        prompt,
        aspect_ratio: { type: 'string', enum: ['custom', ...FLUX_ASPECT_RATIOS], default: '1:1' },
        width: { type: 'integer', minimum: 256, maximum: 1440 },
        height: { type: 'integer', minimum: 256, maximum: 1440 },
        safety_tolerance: { type: 'integer', minimum: 1, maximum: 5, default: 2 },
        seed,
        prompt_upsampling: { type: 'boolean', default: false },
        output_format: { type: 'string', enum: FORMATS, default: 'webp' },
        output_quality: { type: 'integer', minimum: 0, maximum: 100, default: 80 },
      },
    },
    price: { per_image_usd: 0.04, per_second_usd: 0 },
  },
  {
    name: 'stability-ai/sdxl',
    official: false,
    versions: [
      '7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc',
      '39ed52f2a78e934b3ba6e2a89f5b1c712de7dfea535525255b1aa35c5565e08b',
    ],
    output: 'list',
    input: {
      required: [],
      properties: {
        prompt: { type: 'string', default: 'An astronaut riding a rainbow unicorn' },
        negative_prompt: { type: 'string', default: '' },
        width: { type: 'integer', default: 1024 },
        height: { type: 'integer', default: 1024 },
        num_outputs: { type: 'integer', minimum: 1, maximum: 4, default: 1 },
        scheduler: {
          type: 'string',
          enum: [
            'DDIM',
            'DPMSolverMultistep',
            'HeunDiscrete',
            'KarrasDPM',
            'K_EULER_ANCESTRAL',
            'K_EULER',
            'PNDM',
          ],
          default: 'K_EULER',
        },
        num_inference_steps: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
        guidance_scale: { type: 'number', minimum: 1, maximum: 50, default: 7.5 },
        seed,
      },
    },
    price: { per_image_usd: 0, per_second_usd: 0.000975 },
  },
];

/** What a prediction's images are, from its input with the schema's defaults applied. */
export interface ImagePlan {
  prompt: string;
  /** One URL or a list of them in `output`, as the model's output schema says. */
  outputKind: 'list' | 'single';
  count: number;
  width: number;
  height: number;
  format: 'webp' | 'jpg' | 'png';
  /** The input turned the safety checker off (`disable_safety_checker: true`). */
  safetyCheckerOff: boolean;
}

/** FLUX's 1-megapixel sizes per aspect ratio (multiples of 64, about 1024 x 1024 pixels). */
const FLUX_SIZES: Readonly<Record<string, readonly [number, number]>> = {
  '1:1': [1024, 1024],
  '16:9': [1344, 768],
  '9:16': [768, 1344],
  '21:9': [1536, 640],
  '9:21': [640, 1536],
  '3:2': [1216, 832],
  '2:3': [832, 1216],
  '4:5': [896, 1088],
  '5:4': [1088, 896],
  '3:4': [896, 1152],
  '4:3': [1152, 896],
};

const multipleOf16 = (n: number): number => Math.max(16, Math.round(n / 16) * 16);

export function imagePlan(model: ModelConfig, input: Record<string, unknown>): ImagePlan {
  const count = model.output === 'single' ? 1 : typeof input.num_outputs === 'number' ? input.num_outputs : 1;
  let [width, height] = FLUX_SIZES['1:1']!;
  const ratio = input.aspect_ratio;
  const table = typeof ratio === 'string' ? FLUX_SIZES[ratio] : undefined;
  if (table) {
    // megapixels "0.25": half of each side.
    const scale = input.megapixels === '0.25' ? 0.5 : 1;
    [width, height] = [table[0] * scale, table[1] * scale];
  } else if (typeof input.width === 'number' && typeof input.height === 'number') {
    [width, height] = [multipleOf16(input.width), multipleOf16(input.height)];
  }
  const format = input.output_format;
  return {
    prompt: typeof input.prompt === 'string' ? input.prompt : '',
    outputKind: model.output,
    count: Math.max(1, Math.floor(count)),
    width,
    height,
    format: format === 'webp' || format === 'jpg' ? format : 'png',
    safetyCheckerOff: input.disable_safety_checker === true,
  };
}

export const CONTENT_TYPES = { webp: 'image/webp', jpg: 'image/jpeg', png: 'image/png' } as const;
