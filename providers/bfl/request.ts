// An item as the body of BFL's `POST /v1/{model}`, by model family (models.ts): the aspect ratio
// and resolution become `width`/`height` (multiples of 32 within the model's bounds) or
// `aspect_ratio`, reference images `input_image`, `input_image_2`... as URLs (BFL fetches them).
// What BFL cannot do is a problem for `validate`, never a silent drop: several images per request
// (`n`), a language for messages, a size or a reference image the model does not take. `params`
// go into the body as they are (BFL's own fields: seed, safety_tolerance, output_format,
// prompt_upsampling, raw, steps, guidance...), unless a mapped field sets them.
import type { ItemRequest, MappingProblem, ProviderRequest } from '../types.js';
import { aspectRatio, paramsClashes, pixelSize } from '../mapping.js';
import {
  BFL_MODELS,
  FIXED_RESOLUTION,
  FLUX2_MAX_PIXELS,
  inputImageField,
  modelSpec,
  RATIO_RANGE,
  SIDE_BOUNDS,
  SIDE_STEP,
  type BflModelSpec,
  type ModelFamily,
} from './models.js';

/** Fields of the body and the manifest field that sets each. */
type Mapped = Record<string, string>;

interface Part {
  fields: Record<string, unknown>;
  mapped: Mapped;
  problems: MappingProblem[];
}

const WEBHOOK_FIELDS: Mapped = { webhook_url: 'webhooks settings', webhook_secret: 'webhooks settings' };

export function mapBflRequest(
  item: ItemRequest,
): { request: ProviderRequest } | { problems: MappingProblem[] } {
  const spec = modelSpec(item.model);
  if (spec === undefined)
    return {
      problems: [
        {
          path: ['model'],
          message: `"${item.model}" is not a BFL model pixelmill maps; use one of ${Object.keys(BFL_MODELS).join(', ')}`,
        },
      ],
    };
  const problems: MappingProblem[] = [];
  if (item.n !== 1)
    problems.push({
      path: ['n'],
      message: 'BFL makes one image per request: set n: 1 and list the item again (another seed) for more',
    });
  if (item.language !== undefined)
    problems.push({
      path: ['language'],
      message: "BFL's API has no language setting (it answers in English); remove it",
    });
  const size = sizePart(item, spec.family);
  const images = imagePart(item, spec);
  problems.push(...size.problems, ...images.problems);
  problems.push(
    ...paramsClashes(item.params, { prompt: 'prompt', ...size.mapped, ...images.mapped, ...WEBHOOK_FIELDS }),
  );
  if (problems.length > 0) return { problems };
  const body = { ...item.params, prompt: item.prompt, ...size.fields, ...images.fields };
  return { request: { model: item.model, body } };
}

function sizePart(item: ItemRequest, family: ModelFamily): Part {
  return family === 'flux1' || family === 'flux2' ? pixelPart(item, family) : ratioPart(item, family);
}

/** `width`/`height` (FLUX.1, FLUX.2): the aspect ratio with the resolution's long side (mapping.ts). */
function pixelPart(item: ItemRequest, family: 'flux1' | 'flux2'): Part {
  const { model, size, resolution } = item;
  const none: Part = { fields: {}, mapped: {}, problems: [] };
  if (size === 'auto') {
    // The model's own size (FLUX1.1 [pro] 1024x768, FLUX.2 1024x1024 or the input image's): about 1K.
    if (resolution === '1K') return none;
    return problem(
      ['resolution'],
      `with size auto ${model} picks its own size (about 1K); give an aspect ratio for ${resolution}`,
    );
  }
  if (aspectRatio(size) === undefined)
    return problem(['size'], `"${size}" is not an aspect ratio W:H or auto`);
  const pixels = pixelSize(size, resolution, SIDE_STEP);
  if (pixels === undefined) return problem(['resolution'], `"${resolution}" is not 1K, 2K or 4K`);
  const bound = outOfBounds(family, pixels);
  if (bound !== undefined) {
    // At 1:1 the same resolution fits: the ratio is what does not; otherwise the resolution.
    const square = pixelSize('1:1', resolution, SIDE_STEP);
    const path = square && outOfBounds(family, square) === undefined ? 'size' : 'resolution';
    return problem(
      [path],
      `${resolution} at ${size} is ${pixels.width}x${pixels.height} pixels, and ${model} takes ${bound}`,
    );
  }
  return {
    fields: { width: pixels.width, height: pixels.height },
    mapped: { width: 'size and resolution', height: 'size and resolution' },
    problems: [],
  };
}

/** The bound `pixels` breaks, in words, or undefined when the model takes them. */
function outOfBounds(family: 'flux1' | 'flux2', { width, height }: { width: number; height: number }) {
  if (family === 'flux1') {
    const { min, max } = SIDE_BOUNDS.flux1;
    const fits = [width, height].every((side) => side >= min && side <= max);
    return fits ? undefined : `${min} to ${max} pixels a side`;
  }
  if (Math.min(width, height) < SIDE_BOUNDS.flux2.min)
    return `at least ${SIDE_BOUNDS.flux2.min} pixels a side`;
  return width * height > FLUX2_MAX_PIXELS ? 'at most 4 megapixels (2048x2048)' : undefined;
}

/** `aspect_ratio` (Ultra, Kontext): their size is fixed, so only one resolution is true to it. */
function ratioPart(item: ItemRequest, family: ModelFamily): Part {
  const { model, size, resolution } = item;
  const problems: MappingProblem[] = [];
  const fixed = FIXED_RESOLUTION[family];
  if (fixed !== undefined && resolution !== fixed)
    problems.push({
      path: ['resolution'],
      message: `${model} makes about ${fixed === '2K' ? '4 megapixels' : '1 megapixel'} whatever is asked: set resolution: ${fixed}`,
    });
  // auto: the model's default (Ultra 16:9; Kontext the input image's ratio, else 1:1).
  if (size === 'auto') return { fields: {}, mapped: {}, problems };
  const ratio = aspectRatio(size);
  if (ratio === undefined || ratio.w / ratio.h < RATIO_RANGE.min || ratio.w / ratio.h > RATIO_RANGE.max) {
    problems.push({ path: ['size'], message: `${model} takes aspect ratios from 9:21 to 21:9 (or auto)` });
    return { fields: {}, mapped: {}, problems };
  }
  return { fields: { aspect_ratio: size }, mapped: { aspect_ratio: 'size' }, problems };
}

/** Reference images as `input_image`, `input_image_2`...: BFL fetches URLs itself. */
function imagePart(item: ItemRequest, spec: BflModelSpec): Part {
  const urls = item.image_urls ?? [];
  if (urls.length === 0) return { fields: {}, mapped: {}, problems: [] };
  if (spec.maxImageUrls === 0)
    return problem(
      ['image_urls'],
      `${item.model} takes no reference image by URL (its image_prompt is base64 only); use flux-kontext-pro or a FLUX.2 model`,
    );
  if (urls.length > spec.maxImageUrls)
    return problem(
      ['image_urls'],
      spec.family === 'kontext'
        ? `${item.model} takes one reference image; its experimental input_image_2 to input_image_4 can be set through params`
        : `${item.model} takes at most ${spec.maxImageUrls} reference images`,
    );
  const fields: Record<string, unknown> = {};
  const mapped: Mapped = {};
  urls.forEach((url, k) => {
    fields[inputImageField(k)] = url;
    mapped[inputImageField(k)] = 'image_urls';
  });
  return { fields, mapped, problems: [] };
}

function problem(path: MappingProblem['path'], message: string): Part {
  return { fields: {}, mapped: {}, problems: [{ path, message }] };
}
