// BFL's request mapping: each model family's size fields, reference images as input_image URLs,
// params passed through, and every field BFL cannot express a problem with its path (also as
// `validate` reports it, at file:line:col).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ASPECT_TOLERANCE } from '../checks/image-checks.js';
import { bfl } from '../providers/bfl/index.js';
import type { ItemRequest, MappingProblem, ProviderRequest } from '../providers/types.js';
import { problemsOf } from './support/manifest-problems.js';

const item = (fields: Partial<ItemRequest> = {}): ItemRequest => ({
  prompt: 'a red chair',
  model: 'flux-pro-1.1',
  size: '1:1',
  resolution: '1K',
  n: 1,
  ...fields,
});

function request(fields: Partial<ItemRequest>): ProviderRequest {
  const mapped = bfl.mapRequest(item(fields));
  if ('problems' in mapped) throw new Error(JSON.stringify(mapped.problems));
  return mapped.request;
}

function problems(fields: Partial<ItemRequest>): MappingProblem[] {
  const mapped = bfl.mapRequest(item(fields));
  if (!('problems' in mapped)) throw new Error(`mapped: ${JSON.stringify(mapped.request)}`);
  return mapped.problems;
}

/** The long side of each tier, as the image checks read it (checks/image-checks.ts). */
const TIER_LONG_SIDE: Record<string, number> = { '1K': 1024, '2K': 2048, '4K': 4096 };

describe('BFL request mapping: sizes by model family', () => {
  // A tier is the long side the image checks expect (1024, 2048, 4096 px); the short side keeps the
  // ratio, both in multiples of 32.
  it.each([
    ['flux-pro-1.1', '1:1', '1K', { width: 1024, height: 1024 }],
    ['flux-pro-1.1', '16:9', '1K', { width: 1024, height: 576 }],
    ['flux-dev', '9:16', '1K', { width: 576, height: 1024 }],
    ['flux-pro-1.1', '4:1', '1K', { width: 1024, height: 256 }],
    ['flux-2-pro', '2:3', '1K', { width: 672, height: 1024 }],
    ['flux-2-pro', '1:1', '2K', { width: 2048, height: 2048 }],
    ['flux-2-klein-4b', '16:9', '2K', { width: 2048, height: 1152 }],
  ])('%s at %s %s is width/height %j, multiples of 32', (model, size, resolution, pixels) => {
    const { model: path, body } = request({ model, size, resolution });
    expect(path).toBe(model);
    expect(body).toEqual({ prompt: 'a red chair', ...pixels });
    expect(pixels.width % 32).toBe(0);
    expect(pixels.height % 32).toBe(0);
    expect(Math.max(pixels.width, pixels.height)).toBe(TIER_LONG_SIDE[resolution]);
    const [w, h] = size.split(':').map(Number) as [number, number];
    expect(Math.abs(pixels.width / pixels.height - w / h) / (w / h)).toBeLessThanOrEqual(ASPECT_TOLERANCE);
  });

  it('size auto leaves the size to the model, at 1K', () => {
    expect(request({ size: 'auto' }).body).toEqual({ prompt: 'a red chair' });
    expect(request({ model: 'flux-2-max', size: 'auto' }).body).toEqual({ prompt: 'a red chair' });
    expect(problems({ model: 'flux-2-pro', size: 'auto', resolution: '2K' })).toEqual([
      {
        path: ['resolution'],
        message: 'with size auto flux-2-pro picks its own size (about 1K); give an aspect ratio for 2K',
      },
    ]);
  });

  it('a size beyond the model bounds is a problem naming the bound, on the field to change', () => {
    // A tier's long side is the same at every ratio, so a ratio crosses a bound only by its short
    // side: 5:1 at 1K is 992x192, under FLUX.1's 256, where 1:1 fits (4:1, 1024x256, fits, above).
    expect(problems({ size: '5:1' })).toEqual([
      {
        path: ['size'],
        message: '1K at 5:1 is 992x192 pixels, and flux-pro-1.1 takes 256 to 1440 pixels a side',
      },
    ]);
    // No ratio fits 2K on FLUX.1 (its long side is 2048): the resolution is the problem.
    expect(problems({ resolution: '2K' })).toEqual([
      {
        path: ['resolution'],
        message: '2K at 1:1 is 2048x2048 pixels, and flux-pro-1.1 takes 256 to 1440 pixels a side',
      },
    ]);
    expect(problems({ size: '16:9', resolution: '2K' })).toEqual([
      {
        path: ['resolution'],
        message: '2K at 16:9 is 2048x1152 pixels, and flux-pro-1.1 takes 256 to 1440 pixels a side',
      },
    ]);
    // FLUX.2's 4 megapixels: 2K at 1:1 is exactly 2048x2048 (above); 4K crosses it at 1:1 and 16:9.
    expect(problems({ model: 'flux-2-pro', resolution: '4K' })).toEqual([
      {
        path: ['resolution'],
        message: '4K at 1:1 is 4096x4096 pixels, and flux-2-pro takes at most 4 megapixels (2048x2048)',
      },
    ]);
    expect(problems({ model: 'flux-2-pro', size: '16:9', resolution: '4K' })).toEqual([
      {
        path: ['resolution'],
        message: '4K at 16:9 is 4096x2304 pixels, and flux-2-pro takes at most 4 megapixels (2048x2048)',
      },
    ]);
    // FLUX.2's 64 pixels a side: 25:1 at 1K is 992x32, where 1:1 fits.
    expect(problems({ model: 'flux-2-pro', size: '25:1' })).toEqual([
      {
        path: ['size'],
        message: '1K at 25:1 is 992x32 pixels, and flux-2-pro takes at least 64 pixels a side',
      },
    ]);
  });

  it('Ultra and Kontext take aspect_ratio, at the one resolution they make', () => {
    expect(request({ model: 'flux-pro-1.1-ultra', size: '16:9', resolution: '2K' }).body).toEqual({
      prompt: 'a red chair',
      aspect_ratio: '16:9',
    });
    expect(request({ model: 'flux-kontext-max', size: '9:21' }).body).toEqual({
      prompt: 'a red chair',
      aspect_ratio: '9:21',
    });
    expect(request({ model: 'flux-kontext-pro', size: 'auto' }).body).toEqual({ prompt: 'a red chair' });
    expect(problems({ model: 'flux-pro-1.1-ultra', size: '3:1' })).toEqual([
      {
        path: ['resolution'],
        message: 'flux-pro-1.1-ultra makes about 4 megapixels whatever is asked: set resolution: 2K',
      },
      { path: ['size'], message: 'flux-pro-1.1-ultra takes aspect ratios from 9:21 to 21:9 (or auto)' },
    ]);
    expect(problems({ model: 'flux-kontext-pro', resolution: '2K' })).toEqual([
      {
        path: ['resolution'],
        message: 'flux-kontext-pro makes about 1 megapixel whatever is asked: set resolution: 1K',
      },
    ]);
  });
});

describe('BFL request mapping: reference images, params and what BFL cannot do', () => {
  const photo = 'https://cdn.example.com/chair.png';

  it('reference images go as input_image URLs where the model takes them', () => {
    expect(request({ model: 'flux-kontext-pro', image_urls: [photo] }).body).toEqual({
      prompt: 'a red chair',
      aspect_ratio: '1:1',
      input_image: photo,
    });
    expect(
      request({ model: 'flux-2-pro', image_urls: [photo, `${photo}?2`, `${photo}?3`] }).body,
    ).toMatchObject({
      input_image: photo,
      input_image_2: `${photo}?2`,
      input_image_3: `${photo}?3`,
    });
  });

  it('more reference images than the model takes, or any where it takes none, is a problem', () => {
    expect(problems({ image_urls: [photo] })).toEqual([
      {
        path: ['image_urls'],
        message:
          'flux-pro-1.1 takes no reference image by URL (its image_prompt is base64 only); use flux-kontext-pro or a FLUX.2 model',
      },
    ]);
    expect(problems({ model: 'flux-kontext-pro', image_urls: [photo, photo] })).toEqual([
      {
        path: ['image_urls'],
        message:
          'flux-kontext-pro takes one reference image; its experimental input_image_2 to input_image_4 can be set through params',
      },
    ]);
    expect(problems({ model: 'flux-2-klein-9b', image_urls: Array(5).fill(photo) })).toEqual([
      { path: ['image_urls'], message: 'flux-2-klein-9b takes at most 4 reference images' },
    ]);
  });

  it("params pass BFL's own fields through; a field pixelmill sets is a problem", () => {
    const params = { seed: 7, safety_tolerance: 4, output_format: 'png', prompt_upsampling: true };
    expect(request({ params }).body).toEqual({ ...params, prompt: 'a red chair', width: 1024, height: 1024 });
    expect(
      request({ model: 'flux-pro-1.1-ultra', resolution: '2K', params: { raw: true } }).body,
    ).toMatchObject({
      raw: true,
    });
    // With size auto, width and height are the user's to give.
    expect(request({ size: 'auto', params: { width: 512, height: 768 } }).body).toEqual({
      prompt: 'a red chair',
      width: 512,
      height: 768,
    });
    expect(
      problems({
        model: 'flux-kontext-pro',
        image_urls: [photo],
        params: { width: 1, aspect_ratio: '1:1', input_image: 'x', prompt: 'y', webhook_secret: 's' },
      }),
    ).toEqual([
      { path: ['params', 'aspect_ratio'], message: "is set from the item's size; set that instead" },
      { path: ['params', 'input_image'], message: "is set from the item's image_urls; set that instead" },
      { path: ['params', 'prompt'], message: "is set from the item's prompt; set that instead" },
      {
        path: ['params', 'webhook_secret'],
        message: "is set from the item's webhooks settings; set that instead",
      },
    ]);
  });

  it('n above 1, a language and an unknown model are problems, all reported together', () => {
    expect(problems({ n: 3, language: 'ja', resolution: '2K' })).toEqual([
      {
        path: ['n'],
        message: 'BFL makes one image per request: set n: 1 and list the item again (another seed) for more',
      },
      { path: ['language'], message: "BFL's API has no language setting (it answers in English); remove it" },
      {
        path: ['resolution'],
        message: '2K at 1:1 is 2048x2048 pixels, and flux-pro-1.1 takes 256 to 1440 pixels a side',
      },
    ]);
    expect(problems({ model: 'flux-schnell' })).toEqual([
      {
        path: ['model'],
        message: expect.stringMatching(
          /^"flux-schnell" is not a BFL model pixelmill maps; use one of flux-pro-1.1, /,
        ),
      },
    ]);
  });

  it('validate reports the problems at the file:line:col of the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelmill-bfl-'));
    writeFileSync(
      join(dir, 'm.yaml'),
      [
        'name: bfl-chairs',
        'api: { provider: bfl }',
        'items:',
        '  - prompt: a red chair',
        '  - prompt: two blue chairs',
        '    n: 2',
        '  - { prompt: a lamp, model: flux-2-pro, resolution: 4K }',
      ].join('\n'),
    );
    const lines = problemsOf(join(dir, 'm.yaml'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/m\.yaml:6:8 items\[1\]\.n: BFL makes one image per request/);
    expect(lines[1]).toMatch(/m\.yaml:7:\d+ items\[2\]\.resolution: 4K at 1:1 is 4096x4096 pixels/);
  });
});
