// The FLUX models pixelmill maps for BFL, grouped by how each family takes a size and reference
// images (BFL's OpenAPI document, api.bfl.ai/openapi.json, as its API reference pages show it,
// and help.bfl.ai's FLUX.2 specifications):
// - `flux1` (FLUX1.1 [pro], FLUX.1 [dev]): `width`/`height`, 256 to 1440 a side, multiples of 32;
//   no reference image by URL (their `image_prompt` is base64);
// - `ultra` (FLUX1.1 [pro] Ultra): `aspect_ratio` (21:9 to 9:21), about 4 megapixels always;
// - `kontext` (FLUX.1 Kontext [pro]/[max]): `aspect_ratio` (21:9 to 9:21), about 1 megapixel
//   always; `input_image` a URL or base64 (`input_image_2..4` are experimental);
// - `flux2` (FLUX.2 [pro]/[max]/[flex]/[klein]): `width`/`height`, at least 64 a side, multiples
//   of 16, at most 4 megapixels (2048x2048); `input_image`, `input_image_2`.. by URL or base64.

export type ModelFamily = 'flux1' | 'ultra' | 'kontext' | 'flux2';

export interface BflModelSpec {
  family: ModelFamily;
  /** Reference images the request takes by URL (`input_image`, `input_image_2`, ...). */
  maxImageUrls: number;
}

export const BFL_MODELS: Readonly<Record<string, BflModelSpec>> = {
  'flux-pro-1.1': { family: 'flux1', maxImageUrls: 0 },
  'flux-dev': { family: 'flux1', maxImageUrls: 0 },
  'flux-pro-1.1-ultra': { family: 'ultra', maxImageUrls: 0 },
  // BFL documents four; the three beyond the first are "experimental multiref", left to params.
  'flux-kontext-pro': { family: 'kontext', maxImageUrls: 1 },
  'flux-kontext-max': { family: 'kontext', maxImageUrls: 1 },
  'flux-2-pro': { family: 'flux2', maxImageUrls: 8 },
  'flux-2-max': { family: 'flux2', maxImageUrls: 8 },
  'flux-2-flex': { family: 'flux2', maxImageUrls: 8 },
  'flux-2-klein-4b': { family: 'flux2', maxImageUrls: 4 },
  'flux-2-klein-9b': { family: 'flux2', maxImageUrls: 4 },
};

export const DEFAULT_MODEL = 'flux-pro-1.1';

export function modelSpec(model: string): BflModelSpec | undefined {
  return Object.hasOwn(BFL_MODELS, model) ? BFL_MODELS[model] : undefined;
}

/** The request field of the k-th reference image (0-based): `input_image`, `input_image_2`, ... */
export function inputImageField(k: number): string {
  return k === 0 ? 'input_image' : `input_image_${k + 1}`;
}

/** Pixel bounds of the width/height families. */
export const SIDE_BOUNDS = {
  flux1: { min: 256, max: 1440 },
  flux2: { min: 64 },
} as const;
/** FLUX.2's largest image: 4 megapixels, 2048x2048. */
export const FLUX2_MAX_PIXELS = 2048 * 2048;
/** Every side pixelmill asks for is a multiple of this (FLUX.1 needs 32, FLUX.2 16). */
export const SIDE_STEP = 32;

/** The aspect ratios `aspect_ratio` takes (Ultra, Kontext): between 9:21 and 21:9. */
export const RATIO_RANGE = { min: 9 / 21, max: 21 / 9 } as const;

/** The resolution tier the fixed-size families make: Ultra about 4 MP, Kontext about 1 MP. */
export const FIXED_RESOLUTION: Readonly<Partial<Record<ModelFamily, string>>> = {
  ultra: '2K',
  kontext: '1K',
};
