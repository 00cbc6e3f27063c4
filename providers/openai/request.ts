// An item as the body of OpenAI's `POST /v1/images/generations` (the same body a Batch request
// line carries): the aspect ratio becomes `size` (1024x1024, 1536x1024, 1024x1536 or auto), `n`
// is `n`, the quality is `params.quality` or DEFAULT_QUALITY, and `params` pass through
// (`output_format`, `background`, `output_compression`, `moderation`, `user`). What the Images
// API cannot make is a problem for `validate`, never a silent drop: another ratio, 2K or 4K,
// reference images (those are the edits endpoint's), a language, a retired model.
import type { ItemRequest, MappingProblem, ProviderRequest } from '../types.js';
import { paramsClashes } from '../mapping.js';
import {
  DEFAULT_QUALITY,
  IMAGE_MODEL,
  MAX_IMAGES,
  QUALITIES,
  RETIRED_MODEL,
  SIZE_OF_RATIO,
} from './models.js';

const MAPPED = { prompt: 'prompt', model: 'model', size: 'size', n: 'n' } as const;

/** Values the API takes for the pass-through fields pixelmill checks (others go as they are). */
const CHOICES: Readonly<Record<string, readonly string[]>> = {
  quality: QUALITIES,
  output_format: ['png', 'jpeg', 'webp'],
  background: ['transparent', 'opaque', 'auto'],
  moderation: ['low', 'auto'],
};

export function mapOpenAIRequest(
  item: ItemRequest,
): { request: ProviderRequest } | { problems: MappingProblem[] } {
  const problems: MappingProblem[] = [...modelProblems(item.model), ...sizeProblems(item)];
  if (!Number.isInteger(item.n) || item.n < 1 || item.n > MAX_IMAGES)
    problems.push({ path: ['n'], message: `OpenAI's Images API makes 1 to ${MAX_IMAGES} images a request` });
  if (item.image_urls?.length)
    problems.push({
      path: ['image_urls'],
      message:
        "OpenAI's image generations take no reference images (that is its edits endpoint, which pixelmill does not drive); remove them for this provider",
    });
  if (item.language !== undefined)
    problems.push({
      path: ['language'],
      message: "OpenAI's Images API has no language for error messages; remove it for this provider",
    });
  problems.push(...paramsClashes(item.params, MAPPED), ...paramsProblems(item.params));
  if (problems.length > 0) return { problems };
  const body: Record<string, unknown> = {
    quality: DEFAULT_QUALITY,
    ...item.params,
    model: item.model,
    prompt: item.prompt,
    n: item.n,
  };
  if (item.size !== 'auto') body.size = SIZE_OF_RATIO[item.size];
  return { request: { model: item.model, body } };
}

function modelProblems(model: string): MappingProblem[] {
  if (IMAGE_MODEL.test(model)) return [];
  const message = RETIRED_MODEL.test(model)
    ? `${model} was retired by OpenAI on 2026-05-12; use a GPT image model such as gpt-image-1.5`
    : `"${model}" is not an OpenAI GPT image model (gpt-image-1.5, gpt-image-1-mini, gpt-image-2...)`;
  return [{ path: ['model'], message }];
}

function sizeProblems({ size, resolution }: ItemRequest): MappingProblem[] {
  const problems: MappingProblem[] = [];
  if (size !== 'auto' && SIZE_OF_RATIO[size] === undefined)
    problems.push({
      path: ['size'],
      message: `OpenAI's Images API makes 1:1 (1024x1024), 3:2 (1536x1024) and 2:3 (1024x1536), or auto; not ${size}`,
    });
  if (resolution !== '1K')
    problems.push({
      path: ['resolution'],
      message: `OpenAI's Images API makes images of about 1 megapixel (1K, long side 1024 or 1536); ${resolution} is not available`,
    });
  return problems;
}

function paramsProblems(params: Record<string, unknown> | undefined): MappingProblem[] {
  if (params === undefined) return [];
  const problems: MappingProblem[] = [];
  for (const [field, choices] of Object.entries(CHOICES)) {
    const value = params[field];
    if (value !== undefined && !(typeof value === 'string' && choices.includes(value)))
      problems.push({ path: ['params', field], message: `must be one of ${choices.join(', ')}` });
  }
  const compression = params.output_compression;
  if (compression !== undefined) {
    if (!Number.isInteger(compression) || (compression as number) < 0 || (compression as number) > 100)
      problems.push({
        path: ['params', 'output_compression'],
        message: 'must be a whole number from 0 to 100',
      });
    else if (params.output_format !== 'jpeg' && params.output_format !== 'webp')
      problems.push({
        path: ['params', 'output_compression'],
        message: 'applies to output_format jpeg or webp only (the default is png)',
      });
  }
  if (params.response_format !== undefined)
    problems.push({
      path: ['params', 'response_format'],
      message: 'GPT image models always answer with base64 images (b64_json); remove it',
    });
  if (params.stream !== undefined)
    problems.push({
      path: ['params', 'stream'],
      message: 'pixelmill does not stream partial images; remove it',
    });
  return problems;
}
