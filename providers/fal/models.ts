// The fal models pixelmill maps, by how each takes a size and reference images (fal's model API
// pages and the input types fal-ai/fal-js generates from them):
// - `image_size` (FLUX.1 [dev], [schnell], FLUX1.1 [pro]): a named size or `{width, height}`;
//   no reference image. FLUX1.1 [pro] runs at BFL, whose sides are 256 to 1440, multiples of 32;
//   fal's ImageSize takes up to 14142 a side for the others, drawn in FLUX's 16-pixel blocks;
// - `input_image` (FLUX.1 [dev] image-to-image): one `image_url`, whose size the output keeps;
// - `aspect_ratio` (FLUX.1 Kontext [pro]/[max]): `aspect_ratio` from 21:9 to 9:21 at about one
//   megapixel; `image_url` (one), `image_urls` (multi) or none (text-to-image).
// Every one takes `num_images` from 1 to 4. Another fal model gets fal's common arguments only
// (prompt, num_images), its size and references through `params` (request.ts says so).

export type SizeStyle =
  | { kind: 'image_size'; step: number; minSide: number; maxSide: number }
  | { kind: 'input_image' }
  | { kind: 'aspect_ratio' };

export type ReferenceStyle =
  { kind: 'none' } | { kind: 'one'; field: 'image_url' } | { kind: 'many'; field: 'image_urls' };

export interface FalModelSpec {
  size: SizeStyle;
  references: ReferenceStyle;
  maxImages: number;
}

/** fal's named sizes (docs: common model arguments), used when the wanted size is one exactly. */
export const NAMED_SIZES: Readonly<Record<string, readonly [number, number]>> = {
  square_hd: [1024, 1024],
  square: [512, 512],
  portrait_4_3: [768, 1024],
  portrait_16_9: [576, 1024],
  landscape_4_3: [1024, 768],
  landscape_16_9: [1024, 576],
};

/** Kontext's `aspect_ratio` values. */
export const KONTEXT_RATIOS: readonly string[] = [
  '21:9',
  '16:9',
  '4:3',
  '3:2',
  '1:1',
  '2:3',
  '3:4',
  '9:16',
  '9:21',
];

/** `num_images` bound of every model here ("typically 1-4" for fal's image models). */
export const MAX_IMAGES = 4;

const FLUX1_OPEN: SizeStyle = { kind: 'image_size', step: 16, minSide: 64, maxSide: 14_142 };
const FLUX1_PRO: SizeStyle = { kind: 'image_size', step: 32, minSide: 256, maxSide: 1440 };
const KONTEXT: SizeStyle = { kind: 'aspect_ratio' };
const NONE: ReferenceStyle = { kind: 'none' };
const ONE: ReferenceStyle = { kind: 'one', field: 'image_url' };
const MANY: ReferenceStyle = { kind: 'many', field: 'image_urls' };

const spec = (size: SizeStyle, references: ReferenceStyle): FalModelSpec => ({
  size,
  references,
  maxImages: MAX_IMAGES,
});

export const FAL_MODELS: Readonly<Record<string, FalModelSpec>> = {
  'fal-ai/flux/dev': spec(FLUX1_OPEN, NONE),
  'fal-ai/flux/schnell': spec(FLUX1_OPEN, NONE),
  'fal-ai/flux-pro/v1.1': spec(FLUX1_PRO, NONE),
  'fal-ai/flux/dev/image-to-image': spec({ kind: 'input_image' }, ONE),
  'fal-ai/flux-pro/kontext': spec(KONTEXT, ONE),
  'fal-ai/flux-pro/kontext/max': spec(KONTEXT, ONE),
  'fal-ai/flux-pro/kontext/multi': spec(KONTEXT, MANY),
  'fal-ai/flux-pro/kontext/max/multi': spec(KONTEXT, MANY),
  'fal-ai/flux-pro/kontext/text-to-image': spec(KONTEXT, NONE),
  'fal-ai/flux-pro/kontext/max/text-to-image': spec(KONTEXT, NONE),
};

export const DEFAULT_MODEL = 'fal-ai/flux/dev';

export function modelSpec(model: string): FalModelSpec | undefined {
  return Object.hasOwn(FAL_MODELS, model) ? FAL_MODELS[model] : undefined;
}

/** `owner/app` and an optional endpoint path, each segment plain URL text: what fal's URLs take. */
export const MODEL_ID = /^[A-Za-z0-9][\w.-]*(\/[A-Za-z0-9][\w.-]*)+$/;
