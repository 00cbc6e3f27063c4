// An item as the first API's generation request (spec 2.1): its fields are pixelmill's own, so the
// mapping is one to one; `params` go into the body as they are (the API ignores what it does not
// know). What the spec bounds (reference images) is checked here, for `validate` to report.
import type { ItemRequest, MappingProblem, ProviderRequest } from '../types.js';
import { paramsClashes } from '../mapping.js';
import { MAX_IMAGE_URLS } from '../../common/generation.js';

export const DEFAULT_MODEL = 'gpt-image-2';

/** The request's fields pixelmill fills, with the manifest field that sets each. */
const MAPPED = {
  prompt: 'prompt',
  model: 'model',
  size: 'size',
  resolution: 'resolution',
  n: 'n',
  image_urls: 'image_urls',
  language: 'language',
  webhook: 'webhooks settings',
};

export function mapApimartRequest(
  item: ItemRequest,
): { request: ProviderRequest } | { problems: MappingProblem[] } {
  const problems: MappingProblem[] = [];
  if ((item.image_urls?.length ?? 0) > MAX_IMAGE_URLS)
    problems.push({
      path: ['image_urls'],
      message: `takes at most ${MAX_IMAGE_URLS} reference images on this API`,
    });
  problems.push(...paramsClashes(item.params, MAPPED));
  if (problems.length > 0) return { problems };
  const body: Record<string, unknown> = {
    ...item.params,
    prompt: item.prompt,
    size: item.size,
    resolution: item.resolution,
    n: item.n,
  };
  if (item.image_urls?.length) body.image_urls = item.image_urls;
  if (item.language !== undefined) body.language = item.language;
  return { request: { model: item.model, body } };
}
