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
  count: number;
  /** Aspect ratio `w:h` (as emulator/images/render.ts draws it). */
  size: string;
  format: 'webp' | 'jpg' | 'png';
  /** The input turned the safety checker off (`disable_safety_checker: true`). */
  safetyCheckerOff: boolean;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

export function imagePlan(model: ModelConfig, input: Record<string, unknown>): ImagePlan {
  const count = model.output === 'single' ? 1 : typeof input.num_outputs === 'number' ? input.num_outputs : 1;
  const ratio = input.aspect_ratio;
  let size = '1:1';
  if (typeof ratio === 'string' && ratio !== 'custom') size = ratio;
  else if (typeof input.width === 'number' && typeof input.height === 'number') {
    const w = Math.max(1, Math.round(input.width));
    const h = Math.max(1, Math.round(input.height));
    const d = gcd(w, h);
    size = `${w / d}:${h / d}`;
  }
  const format = input.output_format;
  return {
    prompt: typeof input.prompt === 'string' ? input.prompt : '',
    count: Math.max(1, Math.floor(count)),
    size,
    format: format === 'webp' || format === 'jpg' ? format : 'png',
    safetyCheckerOff: input.disable_safety_checker === true,
  };
}

export const CONTENT_TYPES = { webp: 'image/webp', jpg: 'image/jpeg', png: 'image/png' } as const;
