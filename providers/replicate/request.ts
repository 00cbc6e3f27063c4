// An item as a Replicate prediction's `input`: prompt as `prompt`, size as `aspect_ratio` (from
// the model's enum), resolution as `megapixels` where the model has it, n as `num_outputs`, the
// reference image as the model's image input; then the item's `params` as they are. What the
// model's inputs cannot express is a problem for `validate`, never dropped.
import type { Resolution } from '../../common/generation.js';
import { aspectRatio, paramsClashes } from '../mapping.js';
import type { ItemRequest, MappingProblem, ProviderRequest } from '../types.js';
import { modelInputs, modelNameOf, parseModelRef, type ModelInputs } from './models.js';

export const DEFAULT_MODEL = 'black-forest-labs/flux-schnell';

/** `{input}`: the body of a create without what the client adds (version, webhook). */
export interface PredictionBody extends Record<string, unknown> {
  input: Record<string, unknown>;
}

export function mapReplicateRequest(
  item: ItemRequest,
): { request: ProviderRequest } | { problems: MappingProblem[] } {
  const ref = parseModelRef(item.model);
  if (ref === undefined)
    return {
      problems: [
        {
          path: ['model'],
          message:
            'is not a Replicate model: use owner/name (an official model), owner/name:<64-hex version id> or the version id alone',
        },
      ],
    };
  const model = modelNameOf(ref) ?? 'this model version';
  const inputs = modelInputs(ref);
  const problems = [
    ...fieldProblems(item, model, inputs),
    ...paramsClashes(item.params, mapped(item, inputs)),
  ];
  if (problems.length > 0) return { problems };
  return { request: { model: item.model, body: { input: inputOf(item, inputs) } satisfies PredictionBody } };
}

function fieldProblems(item: ItemRequest, model: string, inputs: ModelInputs): MappingProblem[] {
  const problems: MappingProblem[] = [];
  if (item.size !== 'auto') {
    if (aspectRatio(item.size) === undefined)
      problems.push({ path: ['size'], message: `must be an aspect ratio W:H or auto, not "${item.size}"` });
    else if (inputs.aspectRatios && !inputs.aspectRatios.includes(item.size))
      problems.push({
        path: ['size'],
        message: `${model} has no aspect ratio ${item.size}; it takes ${inputs.aspectRatios.join(', ')}`,
      });
  }
  if (!inputs.resolutions.includes(item.resolution as Resolution))
    problems.push({
      path: ['resolution'],
      message: `${model} on Replicate makes images of about 1 megapixel (1K); ${item.resolution} is not available`,
    });
  if (item.n > inputs.maxOutputs)
    problems.push({
      path: ['n'],
      message:
        inputs.maxOutputs === 1
          ? `${model} makes one image per prediction; use n: 1 (one item per image)`
          : `${model} makes at most ${inputs.maxOutputs} images per prediction (num_outputs)`,
    });
  const images = item.image_urls?.length ?? 0;
  if (images > 0 && inputs.imageInput === undefined)
    problems.push({
      path: ['image_urls'],
      message: inputs.known
        ? `${model} takes no reference image`
        : `pixelmill does not know which input of ${model} takes a reference image; pass its URL in params under that input's name`,
    });
  else if (images > 1)
    problems.push({
      path: ['image_urls'],
      message: `${model} takes one reference image (${inputs.imageInput}), not ${images}`,
    });
  if (item.language !== undefined)
    problems.push({
      path: ['language'],
      message: 'Replicate has no language for error messages; remove it for this provider',
    });
  return problems;
}

/** The input fields the mapping sets for this item, each with the manifest field that sets it. */
function mapped(item: ItemRequest, inputs: ModelInputs): Record<string, string> {
  const fields: Record<string, string> = { prompt: 'prompt' };
  // With size auto the model's own default holds, and params may set aspect_ratio (e.g. custom).
  if (item.size !== 'auto') fields.aspect_ratio = 'size';
  if (inputs.megapixels) fields.megapixels = 'resolution';
  if (inputs.maxOutputs > 1) fields.num_outputs = 'n';
  if (inputs.imageInput) fields[inputs.imageInput] = 'image_urls';
  return fields;
}

function inputOf(item: ItemRequest, inputs: ModelInputs): Record<string, unknown> {
  const input: Record<string, unknown> = { ...item.params, prompt: item.prompt };
  if (item.size !== 'auto') input.aspect_ratio = item.size;
  const megapixels = inputs.megapixels?.[item.resolution as Resolution];
  if (megapixels !== undefined) input.megapixels = megapixels;
  // A model pixelmill does not know gets num_outputs only when more than one image is asked for.
  if (inputs.known ? inputs.maxOutputs > 1 : item.n > 1) input.num_outputs = item.n;
  const image = item.image_urls?.[0];
  if (image !== undefined && inputs.imageInput) input[inputs.imageInput] = image;
  return input;
}
