// Replicate's request mapping: what an item becomes for the FLUX models pixelmill knows and for any
// other model, and every field the mapping cannot express reported at its path in the item.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelRef } from '../providers/replicate/models.js';
import { mapReplicateRequest } from '../providers/replicate/request.js';
import type { ItemRequest, MappingProblem } from '../providers/types.js';
import { problemsOf as manifestProblems } from './support/manifest-problems.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

const SCHNELL = 'black-forest-labs/flux-schnell';
const DEV = 'black-forest-labs/flux-dev';
const PRO = 'black-forest-labs/flux-1.1-pro';
const VERSION = '7762fd07cf82c948538e41f63f77d685e02b063e37e496e96eefd46c929f9bdc';

function item(fields: Partial<ItemRequest> = {}): ItemRequest {
  return { prompt: 'a red fox', model: SCHNELL, size: '1:1', resolution: '1K', n: 1, ...fields };
}

function inputOf(fields: Partial<ItemRequest>): Record<string, unknown> {
  const mapped = mapReplicateRequest(item(fields));
  if ('problems' in mapped) throw new Error(JSON.stringify(mapped.problems));
  return (mapped.request.body as { input: Record<string, unknown> }).input;
}

function problemsOf(fields: Partial<ItemRequest>): MappingProblem[] {
  const mapped = mapReplicateRequest(item(fields));
  return 'problems' in mapped ? mapped.problems : [];
}

describe('model references', () => {
  it('reads official names, owner/name:version and bare version ids', () => {
    expect(parseModelRef(SCHNELL)).toEqual({
      kind: 'official',
      owner: 'black-forest-labs',
      name: 'flux-schnell',
    });
    expect(parseModelRef(`stability-ai/sdxl:${VERSION}`)).toEqual({
      kind: 'version',
      model: 'stability-ai/sdxl',
      version: `stability-ai/sdxl:${VERSION}`,
    });
    expect(parseModelRef(VERSION)).toEqual({ kind: 'version', version: VERSION });
    for (const bad of ['flux-schnell', 'a/b/c', `a/b:${VERSION.slice(1)}`, 'a/b:latest', '', '/b'])
      expect(parseModelRef(bad), bad).toBeUndefined();
  });

  it('refuses a model that names nothing on Replicate, at the model field', () => {
    expect(problemsOf({ model: 'gpt-image-2' })).toEqual([
      { path: ['model'], message: expect.stringContaining('is not a Replicate model') },
    ]);
  });
});

describe('the FLUX models', () => {
  it('maps flux-schnell: prompt, aspect ratio, 1 megapixel, num_outputs; params after', () => {
    const mapped = mapReplicateRequest(
      item({ size: '16:9', n: 3, params: { output_format: 'png', seed: 7 } }),
    );
    expect(mapped).toEqual({
      request: {
        model: SCHNELL,
        body: {
          input: {
            output_format: 'png',
            seed: 7,
            prompt: 'a red fox',
            aspect_ratio: '16:9',
            megapixels: '1',
            num_outputs: 3,
          },
        },
      },
    });
  });

  it("maps flux-dev's reference image to `image`", () => {
    expect(inputOf({ model: DEV, image_urls: ['https://example.com/a.png'] })).toMatchObject({
      image: 'https://example.com/a.png',
      megapixels: '1',
      num_outputs: 1,
    });
  });

  it("maps flux-1.1-pro's reference image to `image_prompt`, with neither megapixels nor num_outputs", () => {
    const input = inputOf({ model: PRO, size: '3:2', image_urls: ['https://example.com/a.png'] });
    expect(input).toEqual({
      prompt: 'a red fox',
      aspect_ratio: '3:2',
      image_prompt: 'https://example.com/a.png',
    });
  });

  it('leaves the aspect ratio to the model for size auto, and lets params set it then', () => {
    expect(inputOf({ size: 'auto' })).not.toHaveProperty('aspect_ratio');
    expect(
      inputOf({ model: PRO, size: 'auto', params: { aspect_ratio: 'custom', width: 1440, height: 608 } }),
    ).toMatchObject({ aspect_ratio: 'custom', width: 1440, height: 608 });
  });

  it('reports an aspect ratio outside the model enum at size', () => {
    expect(problemsOf({ model: PRO, size: '21:9' })).toEqual([
      {
        path: ['size'],
        message: expect.stringMatching(/flux-1\.1-pro has no aspect ratio 21:9; it takes 1:1, 16:9/),
      },
    ]);
    expect(problemsOf({ size: '7:5' })).toEqual([
      { path: ['size'], message: expect.stringContaining('7:5') },
    ]);
    expect(problemsOf({ size: '21:9' })).toEqual([]);
  });

  it('reports 2K and 4K at resolution (the models make about 1 megapixel)', () => {
    for (const model of [SCHNELL, DEV, PRO])
      for (const resolution of ['2K', '4K'])
        expect(problemsOf({ model, resolution }), `${model} ${resolution}`).toEqual([
          { path: ['resolution'], message: expect.stringContaining(`${resolution} is not available`) },
        ]);
  });

  it('reports n beyond what one prediction makes', () => {
    expect(problemsOf({ n: 5 })).toEqual([
      { path: ['n'], message: expect.stringContaining('at most 4 images') },
    ]);
    expect(problemsOf({ model: PRO, n: 2 })).toEqual([
      { path: ['n'], message: expect.stringContaining('one image per prediction') },
    ]);
    expect(problemsOf({ n: 4 })).toEqual([]);
  });

  it('reports reference images a model cannot take', () => {
    expect(problemsOf({ image_urls: ['https://example.com/a.png'] })).toEqual([
      { path: ['image_urls'], message: expect.stringContaining('flux-schnell takes no reference image') },
    ]);
    expect(
      problemsOf({ model: DEV, image_urls: ['https://example.com/a.png', 'https://example.com/b.png'] }),
    ).toEqual([
      { path: ['image_urls'], message: expect.stringContaining('takes one reference image (image), not 2') },
    ]);
  });

  it('reports a language (Replicate has none)', () => {
    expect(problemsOf({ language: 'ja' })).toEqual([{ path: ['language'], message: expect.any(String) }]);
  });

  it('reports params that a mapped field sets, naming that field', () => {
    expect(
      problemsOf({
        model: DEV,
        params: { prompt: 'x', aspect_ratio: '1:1', megapixels: '0.25', num_outputs: 2, image: 'u' },
      }),
    ).toEqual([
      { path: ['params', 'prompt'], message: expect.stringContaining("item's prompt") },
      { path: ['params', 'aspect_ratio'], message: expect.stringContaining("item's size") },
      { path: ['params', 'megapixels'], message: expect.stringContaining("item's resolution") },
      { path: ['params', 'num_outputs'], message: expect.stringContaining("item's n") },
      { path: ['params', 'image'], message: expect.stringContaining("item's image_urls") },
    ]);
  });

  it('gives every problem of an item at once', () => {
    const paths = problemsOf({ model: PRO, size: '21:9', resolution: '4K', n: 3, language: 'en' }).map(
      (p) => p.path[0],
    );
    expect(paths).toEqual(['size', 'resolution', 'n', 'language']);
  });
});

describe('other models', () => {
  it('sends a version with the common inputs, num_outputs only when more than one image is asked', () => {
    const mapped = mapReplicateRequest(item({ model: `stability-ai/sdxl:${VERSION}`, size: '4:3' }));
    expect(mapped).toEqual({
      request: {
        model: `stability-ai/sdxl:${VERSION}`,
        body: { input: { prompt: 'a red fox', aspect_ratio: '4:3' } },
      },
    });
    expect(inputOf({ model: VERSION, n: 2 })).toMatchObject({ num_outputs: 2 });
  });

  it('passes any aspect ratio through, but neither 2K nor reference images it cannot place', () => {
    expect(inputOf({ model: 'ideogram-ai/ideogram-v3', size: '7:5' })).toMatchObject({ aspect_ratio: '7:5' });
    expect(
      problemsOf({ model: VERSION, resolution: '2K', image_urls: ['https://example.com/a.png'] }),
    ).toEqual([
      { path: ['resolution'], message: expect.stringContaining('this model version') },
      { path: ['image_urls'], message: expect.stringContaining('pass its URL in params') },
    ]);
  });

  it('takes a reference image through params under the input name the model uses', () => {
    expect(inputOf({ model: VERSION, params: { image: 'https://example.com/a.png' } })).toMatchObject({
      image: 'https://example.com/a.png',
    });
  });
});

describe('validate', () => {
  afterAll(removeTempDirs);

  it('reports what Replicate cannot take at file:line:col, a default once', () => {
    const file = join(tempDir(), 'replicate.yaml');
    writeFileSync(
      file,
      [
        'name: replicate-catalog',
        'api: { provider: replicate }',
        'defaults: { model: black-forest-labs/flux-1.1-pro, language: en }',
        'items:',
        '  - prompt: a red chair',
        '  - { prompt: a blue chair, size: "21:9", n: 2 }',
        '  - { prompt: a green chair, model: black-forest-labs/flux-schnell, resolution: 2K }',
        '  - { prompt: a chair, params: { aspect_ratio: "1:1" } }',
      ].join('\n'),
    );
    const problems = manifestProblems(file).join('\n');
    expect(problems).toContain('replicate.yaml:3:62 defaults.language: Replicate has no language');
    expect(problems).toMatch(
      /replicate\.yaml:6:35 items\[1\]\.size: black-forest-labs\/flux-1\.1-pro has no aspect ratio 21:9/,
    );
    expect(problems).toMatch(/replicate\.yaml:6:46 items\[1\]\.n: .*one image per prediction/);
    expect(problems).toMatch(/replicate\.yaml:7:\d+ items\[2\]\.resolution: .*2K is not available/);
    expect(problems).toMatch(
      /replicate\.yaml:8:\d+ items\[3\]\.params\.aspect_ratio: is set from the item's size/,
    );
    expect(problems.match(/defaults\.language/g)).toHaveLength(1);
  });
});
