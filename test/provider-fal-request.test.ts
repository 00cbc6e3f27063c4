// fal's request mapping: sizes as image_size (named when exact) or Kontext's aspect_ratio,
// references as image_url / image_urls by model, n as num_images, params passed through, and every
// field fal cannot express a problem with its path (also as `validate` reports it, file:line:col).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ASPECT_TOLERANCE } from '../checks/image-checks.js';
import { fal } from '../providers/fal/index.js';
import type { ItemRequest, MappingProblem, ProviderRequest } from '../providers/types.js';
import { problemsOf } from './support/manifest-problems.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

afterAll(removeTempDirs);

const item = (fields: Partial<ItemRequest> = {}): ItemRequest => ({
  prompt: 'a red chair',
  model: 'fal-ai/flux/dev',
  size: '1:1',
  resolution: '1K',
  n: 1,
  ...fields,
});

function request(fields: Partial<ItemRequest>): ProviderRequest {
  const mapped = fal.mapRequest(item(fields));
  if ('problems' in mapped) throw new Error(JSON.stringify(mapped.problems));
  return mapped.request;
}

function problems(fields: Partial<ItemRequest>): MappingProblem[] {
  const mapped = fal.mapRequest(item(fields));
  if (!('problems' in mapped)) throw new Error(`mapped: ${JSON.stringify(mapped.request)}`);
  return mapped.problems;
}

/** The long side of each tier, as the image checks read it (checks/image-checks.ts). */
const TIER_LONG_SIDE: Record<string, number> = { '1K': 1024, '2K': 2048, '4K': 4096 };

const URL_A = 'https://refs.example/a.png';
const URL_B = 'https://refs.example/b.png';

describe('fal request mapping: sizes', () => {
  it('1:1 at 1K is the named size square_hd; the model id, sub-path included, is the request model', () => {
    expect(request({})).toEqual({
      model: 'fal-ai/flux/dev',
      body: { prompt: 'a red chair', num_images: 1, image_size: 'square_hd' },
    });
  });

  // A tier is the long side the image checks expect (1024, 2048, 4096 px); the short side keeps the
  // ratio, in the model's steps (16, FLUX1.1 [pro] 32). Where that is one of fal's named sizes
  // exactly, the name goes.
  it.each([
    ['fal-ai/flux/dev', '16:9', 'landscape_16_9'],
    ['fal-ai/flux/schnell', '4:3', 'landscape_4_3'],
    ['fal-ai/flux/dev', '3:4', 'portrait_4_3'],
    ['fal-ai/flux-pro/v1.1', '16:9', 'landscape_16_9'],
    ['fal-ai/flux-pro/v1.1', '9:16', 'portrait_16_9'],
  ])('%s at %s 1K is the named size %s', (model, size, name) => {
    expect(request({ model, size }).body.image_size).toBe(name);
  });

  it.each([
    ['fal-ai/flux/dev', '1:1', '2K', { width: 2048, height: 2048 }],
    ['fal-ai/flux/dev', '16:9', '2K', { width: 2048, height: 1152 }],
    ['fal-ai/flux/dev', '9:16', '4K', { width: 2304, height: 4096 }],
    ['fal-ai/flux/schnell', '21:9', '1K', { width: 1024, height: 432 }],
    ['fal-ai/flux-pro/v1.1', '2:3', '1K', { width: 672, height: 1024 }],
    ['fal-ai/flux-pro/v1.1', '4:1', '1K', { width: 1024, height: 256 }],
  ])('%s at %s %s is image_size %j', (model, size, resolution, pixels) => {
    const { body } = request({ model, size, resolution });
    expect(body.image_size).toEqual(pixels);
    const step = model === 'fal-ai/flux-pro/v1.1' ? 32 : 16;
    expect(pixels.width % step).toBe(0);
    expect(pixels.height % step).toBe(0);
    expect(Math.max(pixels.width, pixels.height)).toBe(TIER_LONG_SIDE[resolution]);
    const [w, h] = size.split(':').map(Number) as [number, number];
    expect(Math.abs(pixels.width / pixels.height - w / h) / (w / h)).toBeLessThanOrEqual(ASPECT_TOLERANCE);
  });

  it('size auto leaves the size to the model at 1K, and is a problem at 2K', () => {
    expect(request({ size: 'auto' }).body).toEqual({ prompt: 'a red chair', num_images: 1 });
    expect(problems({ size: 'auto', resolution: '2K' })).toEqual([
      {
        path: ['resolution'],
        message: expect.stringMatching(/^with size: auto fal-ai\/flux\/dev makes the model's default size/),
      },
    ]);
  });

  it("FLUX1.1 [pro]'s 1440 px sides: too high a resolution, or too narrow a ratio", () => {
    expect(problems({ model: 'fal-ai/flux-pro/v1.1', resolution: '2K' })).toEqual([
      {
        path: ['resolution'],
        message:
          'fal-ai/flux-pro/v1.1 makes sides of 256 to 1440 px; 2K at 1:1 would be 2048x2048: use a lower resolution',
      },
    ]);
    // 1K's long side is 1024 px whatever the ratio, so only the short side can cross a bound at
    // 1K: 5:1 is 992x192 (4:1, 1024x256, is the narrowest that fits, above).
    expect(problems({ model: 'fal-ai/flux-pro/v1.1', size: '5:1' })).toEqual([
      {
        path: ['size'],
        message: '5:1 is too narrow for fal-ai/flux-pro/v1.1, which makes sides of 256 to 1440 px',
      },
    ]);
    expect(problems({ model: 'fal-ai/flux-pro/v1.1', size: '16:9', resolution: '2K' })).toEqual([
      {
        path: ['resolution'],
        message:
          'fal-ai/flux-pro/v1.1 makes sides of 256 to 1440 px; 2K at 16:9 would be 2048x1152: use a lower resolution',
      },
    ]);
  });

  it('Kontext takes aspect_ratio from its list (in lowest terms), about one megapixel only', () => {
    const kontext = { model: 'fal-ai/flux-pro/kontext', image_urls: [URL_A] };
    expect(request({ ...kontext, size: '16:9' }).body).toEqual({
      prompt: 'a red chair',
      num_images: 1,
      aspect_ratio: '16:9',
      image_url: URL_A,
    });
    expect(request({ ...kontext, size: '8:6' }).body.aspect_ratio).toBe('4:3');
    expect(request({ ...kontext, size: 'auto' }).body).not.toHaveProperty('aspect_ratio');
    expect(problems({ ...kontext, size: '5:4' })).toEqual([
      {
        path: ['size'],
        message: expect.stringMatching(/^fal-ai\/flux-pro\/kontext takes the aspect ratios 21:9, 16:9,/),
      },
    ]);
    expect(problems({ ...kontext, resolution: '2K' })).toEqual([
      {
        path: ['resolution'],
        message: 'fal-ai/flux-pro/kontext makes about one megapixel whatever is asked; use 1K',
      },
    ]);
  });

  it("image-to-image keeps the reference's size: only size auto", () => {
    const i2i = { model: 'fal-ai/flux/dev/image-to-image', image_urls: [URL_A] };
    expect(request({ ...i2i, size: 'auto' }).body).toEqual({
      prompt: 'a red chair',
      num_images: 1,
      image_url: URL_A,
    });
    expect(problems(i2i)).toEqual([
      {
        path: ['size'],
        message:
          "fal-ai/flux/dev/image-to-image keeps the reference image's size and aspect ratio; set size: auto",
      },
    ]);
  });
});

describe('fal request mapping: reference images, n, language, params', () => {
  it('image_url for one, image_urls for the multi models', () => {
    expect(
      request({ model: 'fal-ai/flux-pro/kontext/max', size: '1:1', image_urls: [URL_A] }).body.image_url,
    ).toBe(URL_A);
    expect(
      request({ model: 'fal-ai/flux-pro/kontext/multi', image_urls: [URL_A, URL_B] }).body.image_urls,
    ).toEqual([URL_A, URL_B]);
  });

  it('a reference the model does not take, or lacks, is a problem at image_urls', () => {
    expect(problems({ image_urls: [URL_A] })).toEqual([
      {
        path: ['image_urls'],
        message: expect.stringMatching(/^fal-ai\/flux\/dev takes no reference image; use /),
      },
    ]);
    expect(problems({ model: 'fal-ai/flux-pro/kontext', image_urls: [URL_A, URL_B] })).toEqual([
      {
        path: ['image_urls'],
        message:
          'fal-ai/flux-pro/kontext takes one reference image; use fal-ai/flux-pro/kontext/multi for several',
      },
    ]);
    expect(problems({ model: 'fal-ai/flux-pro/kontext' })).toEqual([
      { path: ['image_urls'], message: 'fal-ai/flux-pro/kontext needs one reference image (image_url)' },
    ]);
    expect(problems({ model: 'fal-ai/flux-pro/kontext/max/multi' })).toEqual([
      {
        path: ['image_urls'],
        message: 'fal-ai/flux-pro/kontext/max/multi needs reference images (image_urls)',
      },
    ]);
  });

  it('n is num_images up to 4; more is a problem at n', () => {
    expect(request({ n: 4 }).body.num_images).toBe(4);
    expect(problems({ n: 5 })).toEqual([
      { path: ['n'], message: 'fal-ai/flux/dev makes at most 4 images a request (num_images); lower n' },
    ]);
  });

  it('language is a problem: fal has no such field', () => {
    expect(problems({ language: 'ja' })).toEqual([
      {
        path: ['language'],
        message: "fal's models have no language setting (errors come in English); remove it",
      },
    ]);
  });

  it("params pass fal's own fields through; a mapped field again, or sync_mode, is a problem", () => {
    expect(request({ params: { seed: 7, output_format: 'png', enable_safety_checker: false } }).body).toEqual(
      {
        prompt: 'a red chair',
        num_images: 1,
        image_size: 'square_hd',
        seed: 7,
        output_format: 'png',
        enable_safety_checker: false,
      },
    );
    expect(problems({ params: { num_images: 2, image_size: 'square', sync_mode: true } })).toEqual([
      {
        path: ['params', 'sync_mode'],
        message: expect.stringMatching(/data URIs, which pixelmill does not download/),
      },
      { path: ['params', 'num_images'], message: "is set from the item's n; set that instead" },
      {
        path: ['params', 'image_size'],
        message: "is set from the item's size and resolution; set that instead",
      },
    ]);
    // Not a clash: with size auto pixelmill sets no size, so the model's own field is the user's.
    expect(request({ size: 'auto', params: { image_size: 'portrait_4_3' } }).body.image_size).toBe(
      'portrait_4_3',
    );
  });

  it('another fal model gets prompt and num_images; its size and references go through params', () => {
    expect(
      request({ model: 'fal-ai/recraft/v3/text-to-image', size: 'auto', params: { style: 'any' } }),
    ).toEqual({
      model: 'fal-ai/recraft/v3/text-to-image',
      body: { prompt: 'a red chair', num_images: 1, style: 'any' },
    });
    expect(problems({ model: 'fal-ai/recraft/v3/text-to-image', image_urls: [URL_A] })).toEqual([
      {
        path: ['size'],
        message: expect.stringMatching(
          /^pixelmill does not know how fal-ai\/recraft\/v3\/text-to-image takes a size: set size: auto/,
        ),
      },
      {
        path: ['image_urls'],
        message: expect.stringMatching(
          /takes reference images: give them in the model's own field in params/,
        ),
      },
    ]);
  });

  it('a model id that is not owner/app[/path] is a problem at model', () => {
    expect(problems({ model: 'flux-dev' })).toEqual([
      { path: ['model'], message: '"flux-dev" is not a fal model id (owner/app or owner/app/path)' },
    ]);
    expect(problems({ model: 'fal-ai/flux dev' })).toHaveLength(1);
  });

  it('validate reports the problems at the file:line:col of the field', () => {
    const dir = tempDir('pixelmill-fal-');
    writeFileSync(
      join(dir, 'm.yaml'),
      [
        'name: fal-chairs',
        'api: { provider: fal }',
        'items:',
        '  - prompt: a red chair',
        '  - prompt: two blue chairs',
        '    n: 6',
        '  - { prompt: a lamp, language: ja }',
      ].join('\n'),
    );
    const lines = problemsOf(join(dir, 'm.yaml'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/m\.yaml:6:8 items\[1\]\.n: fal-ai\/flux\/dev makes at most 4 images a request/);
    expect(lines[1]).toMatch(/m\.yaml:7:\d+ items\[2\]\.language: fal's models have no language setting/);
  });
});
