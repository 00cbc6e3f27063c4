// An item as the input of a fal model (models.ts says how each takes a size and references):
// `prompt`, `n` as `num_images`, the aspect ratio and resolution as `image_size` (a named size
// when one is exactly it, else `{width, height}` in the model's pixel steps) or Kontext's
// `aspect_ratio`, reference images as `image_url` or `image_urls`. `params` go into the body as
// they are (fal's own fields: seed, output_format, guidance_scale, enable_safety_checker,
// safety_tolerance...), unless a mapped field sets them. What fal cannot express is a problem for
// `validate`, never a silent drop: a language, too many images, a size or a reference the model
// does not take, and `sync_mode` (data URIs instead of URLs to download).
import type { ItemRequest, MappingProblem, ProviderRequest } from '../types.js';
import { aspectRatio, paramsClashes, pixelSize } from '../mapping.js';
import {
  KONTEXT_RATIOS,
  MAX_IMAGES,
  MODEL_ID,
  modelSpec,
  NAMED_SIZES,
  type FalModelSpec,
  type ReferenceStyle,
  type SizeStyle,
} from './models.js';

/** What one part of the item adds to the body, which fields it sets, and what it cannot say. */
interface Part {
  fields: Record<string, unknown>;
  /** Body field -> the manifest field that sets it (for paramsClashes). */
  mapped: Record<string, string>;
  problems: MappingProblem[];
}

const part = (fields: Record<string, unknown> = {}, mapped: Record<string, string> = {}): Part => ({
  fields,
  mapped,
  problems: [],
});
const problem = (path: MappingProblem['path'], message: string): Part => ({
  fields: {},
  mapped: {},
  problems: [{ path, message }],
});

export function mapFalRequest(
  item: ItemRequest,
): { request: ProviderRequest } | { problems: MappingProblem[] } {
  if (!MODEL_ID.test(item.model))
    return {
      problems: [
        { path: ['model'], message: `"${item.model}" is not a fal model id (owner/app or owner/app/path)` },
      ],
    };
  const spec = modelSpec(item.model);
  const parts = [sizePart(item, spec), referencePart(item, spec?.references), countPart(item, spec)];
  const problems = parts.flatMap((p) => p.problems);
  if (item.language !== undefined)
    problems.push({
      path: ['language'],
      message: "fal's models have no language setting (errors come in English); remove it",
    });
  if (item.params?.sync_mode === true)
    problems.push({
      path: ['params', 'sync_mode'],
      message: 'returns the images inline as data URIs, which pixelmill does not download; remove it',
    });
  const mapped = Object.assign({ prompt: 'prompt' }, ...parts.map((p) => p.mapped)) as Record<string, string>;
  problems.push(...paramsClashes(item.params, mapped));
  if (problems.length > 0) return { problems };
  const body: Record<string, unknown> = { ...item.params, prompt: item.prompt };
  for (const p of parts) Object.assign(body, p.fields);
  return { request: { model: item.model, body } };
}

function countPart(item: ItemRequest, spec: FalModelSpec | undefined): Part {
  const max = spec?.maxImages ?? MAX_IMAGES;
  if (item.n > max)
    return problem(['n'], `${item.model} makes at most ${max} images a request (num_images); lower n`);
  return part({ num_images: item.n }, { num_images: 'n' });
}

function sizePart(item: ItemRequest, spec: FalModelSpec | undefined): Part {
  if (spec === undefined) {
    if (item.size !== 'auto')
      return problem(
        ['size'],
        `pixelmill does not know how ${item.model} takes a size: set size: auto and give the model's own size field in params (fal's FLUX models take image_size)`,
      );
    return defaultSize(item);
  }
  return sizeOf(item, spec.size);
}

function sizeOf(item: ItemRequest, style: SizeStyle): Part {
  switch (style.kind) {
    case 'image_size':
      return imageSize(item, style);
    case 'input_image':
      if (item.size !== 'auto')
        return problem(
          ['size'],
          `${item.model} keeps the reference image's size and aspect ratio; set size: auto`,
        );
      return defaultSize(item, "the reference image's size");
    case 'aspect_ratio':
      return kontextRatio(item);
  }
}

/** `size: auto`: the model's default size, about one megapixel, so only 1K says what it makes. */
function defaultSize(item: ItemRequest, what = "the model's default size (about one megapixel)"): Part {
  if (item.resolution !== '1K')
    return problem(
      ['resolution'],
      `with size: auto ${item.model} makes ${what}; use 1K, or give an aspect ratio`,
    );
  return part();
}

function imageSize(item: ItemRequest, style: Extract<SizeStyle, { kind: 'image_size' }>): Part {
  if (item.size === 'auto') return defaultSize(item);
  const wanted = pixelSize(item.size, item.resolution, style.step);
  if (wanted === undefined)
    return problem(['size'], `expected an aspect ratio W:H or auto, got "${item.size}"`);
  const fits = (s: { width: number; height: number }) =>
    Math.max(s.width, s.height) <= style.maxSide && Math.min(s.width, s.height) >= style.minSide;
  if (!fits(wanted)) {
    const bounds = `sides of ${style.minSide} to ${style.maxSide} px`;
    const at1K = pixelSize(item.size, '1K', style.step);
    if (at1K === undefined || !fits(at1K))
      return problem(['size'], `${item.size} is too narrow for ${item.model}, which makes ${bounds}`);
    return problem(
      ['resolution'],
      `${item.model} makes ${bounds}; ${item.resolution} at ${item.size} would be ${wanted.width}x${wanted.height}: use a lower resolution`,
    );
  }
  const named = Object.entries(NAMED_SIZES).find(([, [w, h]]) => w === wanted.width && h === wanted.height);
  return part({ image_size: named ? named[0] : wanted }, { image_size: 'size and resolution' });
}

function kontextRatio(item: ItemRequest): Part {
  if (item.resolution !== '1K')
    return problem(['resolution'], `${item.model} makes about one megapixel whatever is asked; use 1K`);
  if (item.size === 'auto') return part();
  const ratio = reduced(item.size);
  if (ratio === undefined || !KONTEXT_RATIOS.includes(ratio))
    return problem(['size'], `${item.model} takes the aspect ratios ${KONTEXT_RATIOS.join(', ')} (or auto)`);
  return part({ aspect_ratio: ratio }, { aspect_ratio: 'size' });
}

/** `W:H` in lowest terms (`8:6` is `4:3`), or undefined. */
function reduced(size: string): string | undefined {
  const ratio = aspectRatio(size);
  if (ratio === undefined) return undefined;
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const d = gcd(ratio.w, ratio.h);
  return `${ratio.w / d}:${ratio.h / d}`;
}

function referencePart(item: ItemRequest, style: ReferenceStyle | undefined): Part {
  const urls = item.image_urls ?? [];
  if (style === undefined)
    return urls.length === 0
      ? part()
      : problem(
          ['image_urls'],
          `pixelmill does not know how ${item.model} takes reference images: give them in the model's own field in params (e.g. image_url)`,
        );
  switch (style.kind) {
    case 'none':
      return urls.length === 0
        ? part()
        : problem(
            ['image_urls'],
            `${item.model} takes no reference image; use fal-ai/flux/dev/image-to-image or a Kontext model (fal-ai/flux-pro/kontext)`,
          );
    case 'one':
      if (urls.length === 1) return part({ image_url: urls[0] }, { image_url: 'image_urls' });
      return problem(
        ['image_urls'],
        urls.length === 0
          ? `${item.model} needs one reference image (image_url)`
          : `${item.model} takes one reference image; use fal-ai/flux-pro/kontext/multi for several`,
      );
    case 'many':
      if (urls.length > 0) return part({ image_urls: urls }, { image_urls: 'image_urls' });
      return problem(['image_urls'], `${item.model} needs reference images (image_urls)`);
  }
}
