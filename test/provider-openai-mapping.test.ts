// OpenAI's mapping and Batch file lines, without a server: what an item becomes, what validate
// refuses, the custom_id, and the reading of output and error lines (malformed, cut off, failed).
import { describe, expect, it } from 'vitest';
import { openai } from '../providers/openai/index.js';
import {
  customIdOf,
  keyDigest,
  parseCustomId,
  readResultLine,
  requestLine,
} from '../providers/openai/batch-lines.js';
import { LineSplitter } from '../providers/openai/line-splitter.js';
import { costOfUsage, imagePrice, priceBothWays } from '../providers/openai/pricing.js';
import type { ItemRequest } from '../providers/types.js';

const item = (over: Partial<ItemRequest> = {}): ItemRequest => ({
  prompt: 'a chair',
  model: 'gpt-image-1.5',
  size: '1:1',
  resolution: '1K',
  n: 1,
  ...over,
});

const problemsOf = (request: ItemRequest) => {
  const mapped = openai.mapRequest(request);
  return 'problems' in mapped ? mapped.problems.map((p) => `${p.path.join('.')}: ${p.message}`) : [];
};

describe("OpenAI's mapping", () => {
  it('maps ratio, n and quality onto the Images API body, params passed through', () => {
    const mapped = openai.mapRequest(
      item({ size: '3:2', n: 4, params: { output_format: 'webp', background: 'opaque' } }),
    );
    expect(mapped).toEqual({
      request: {
        model: 'gpt-image-1.5',
        body: {
          model: 'gpt-image-1.5',
          prompt: 'a chair',
          n: 4,
          size: '1536x1024',
          quality: 'medium',
          output_format: 'webp',
          background: 'opaque',
        },
      },
    });
    const portrait = openai.mapRequest(item({ size: '2:3', params: { quality: 'high' } }));
    expect('request' in portrait && portrait.request.body).toMatchObject({
      size: '1024x1536',
      quality: 'high',
    });
    const auto = openai.mapRequest(item({ size: 'auto' }));
    expect('request' in auto && auto.request.body.size).toBeUndefined();
  });

  it('refuses what the Images API cannot make, each field at its path', () => {
    expect(problemsOf(item({ size: '16:9' }))).toEqual([
      expect.stringMatching(/^size: .*1:1.*3:2.*2:3.*not 16:9/),
    ]);
    expect(problemsOf(item({ resolution: '4K' }))).toEqual([
      expect.stringMatching(/^resolution: .*4K is not available/),
    ]);
    expect(problemsOf(item({ n: 11 }))).toEqual([expect.stringMatching(/^n: .*1 to 10/)]);
    expect(problemsOf(item({ image_urls: ['https://x/y.png'] }))).toEqual([
      expect.stringMatching(/^image_urls: /),
    ]);
    expect(problemsOf(item({ language: 'en' }))).toEqual([expect.stringMatching(/^language: /)]);
    expect(problemsOf(item({ model: 'dall-e-3' }))).toEqual([
      expect.stringMatching(/^model: dall-e-3 was retired/),
    ]);
    expect(problemsOf(item({ model: 'flux-dev' }))).toEqual([
      expect.stringMatching(/^model: .*not an OpenAI GPT image model/),
    ]);
    expect(problemsOf(item({ params: { size: '1024x1024' } }))).toEqual([
      "params.size: is set from the item's size; set that instead",
    ]);
    expect(problemsOf(item({ params: { quality: 'hd', output_compression: 50 } }))).toEqual([
      'params.quality: must be one of low, medium, high, auto',
      'params.output_compression: applies to output_format jpeg or webp only (the default is png)',
    ]);
    expect(problemsOf(item({ params: { response_format: 'url' } }))).toEqual([
      expect.stringMatching(/^params.response_format: /),
    ]);
  });
});

describe('Batch file lines', () => {
  const id = customIdOf({ key: keyDigest(`g1-${'ab'.repeat(32)}`), index: 17, attempt: 2 });

  it('names each request by key digest, plan index and attempt, within 64 characters', () => {
    expect(id).toBe(`${'ab'.repeat(16)}:17:2`);
    expect(id.length).toBeLessThanOrEqual(64);
    expect(parseCustomId(id)).toEqual({ key: 'ab'.repeat(16), index: 17, attempt: 2 });
    expect(parseCustomId('item-3')).toBeUndefined();
    const line = JSON.parse(requestLine(id, { model: 'm', body: { prompt: 'p' } })) as Record<
      string,
      unknown
    >;
    expect(line).toEqual({
      custom_id: id,
      method: 'POST',
      url: '/v1/images/generations',
      body: { prompt: 'p' },
    });
  });

  it("reads an output line's images and usage", () => {
    const reading = readResultLine(
      JSON.stringify({
        id: 'batch_req_1',
        custom_id: id,
        response: {
          status_code: 200,
          request_id: 'r',
          body: { data: [{ b64_json: 'aGVsbG8=' }], usage: { input_tokens: 10, output_tokens: 1056 } },
        },
        error: null,
      }),
    );
    expect(reading).toMatchObject({
      kind: 'images',
      customId: id,
      images: ['aGVsbG8='],
      usage: { output_tokens: 1056 },
    });
  });

  it('maps failed requests: moderation final, server errors retryable, the rest the request’s own', () => {
    const failed = (status: number, code: string, message: string) =>
      readResultLine(
        JSON.stringify({
          id: 'x',
          custom_id: id,
          response: { status_code: status, body: { error: { code, message } } },
        }),
      );
    expect(failed(400, 'moderation_blocked', 'Your request was rejected by the safety system')).toMatchObject(
      {
        kind: 'failed',
        error: { type: 'content_policy_violation', code: 'moderation_blocked' },
      },
    );
    expect(failed(500, 'server_error', 'oops')).toMatchObject({ error: { type: 'generation_error' } });
    expect(failed(400, 'invalid_value', 'bad size')).toMatchObject({ error: { type: 'BadRequestError' } });
    const errorLine = readResultLine(
      JSON.stringify({
        id: 'x',
        custom_id: id,
        response: null,
        error: { code: 'batch_expired', message: 'expired' },
      }),
    );
    expect(errorLine).toMatchObject({
      kind: 'failed',
      error: { type: 'generation_error', code: 'batch_expired' },
    });
  });

  it('a malformed or cut-off line fails its item alone, named by the custom_id its text still shows', () => {
    const cut = `{"id":"batch_req_1","custom_id":"${id}","response":{"status_code":200,"body":{"data":[{"b64_json":"iVBOR`;
    expect(readResultLine(cut)).toMatchObject({
      kind: 'unreadable',
      customId: id,
      error: { type: 'generation_error', code: 'malformed_result_line' },
    });
    expect(readResultLine('not json')).toMatchObject({ kind: 'unreadable' });
    expect(readResultLine('not json')).not.toHaveProperty('customId');
    const noImage = JSON.stringify({ custom_id: id, response: { status_code: 200, body: { data: [{}] } } });
    expect(readResultLine(noImage)).toMatchObject({
      kind: 'unreadable',
      customId: id,
      error: { code: 'no_image_output' },
    });
  });
});

describe('the line splitter', () => {
  it('gives each complete line with the offset past it, across chunks, and what is left', () => {
    const splitter = new LineSplitter(100);
    const lines = [
      ...splitter.push(Buffer.from('ab\ncd')),
      ...splitter.push(Buffer.from('e\r\n')),
      ...splitter.push(Buffer.from('\nfg')),
    ];
    expect(lines).toEqual([
      { text: 'ab', end: 103 },
      { text: 'cde', end: 108 },
      { text: '', end: 109 },
    ]);
    expect(splitter.offset).toBe(109);
    expect(splitter.rest()).toEqual({ text: 'fg', end: 111 });
  });

  it('keeps a multi-byte character split between chunks whole', () => {
    const bytes = Buffer.from('é\n');
    const splitter = new LineSplitter(0);
    const lines = [...splitter.push(bytes.subarray(0, 1)), ...splitter.push(bytes.subarray(1))];
    expect(lines).toEqual([{ text: 'é', end: 3 }]);
  });
});

describe('prices', () => {
  it('bills tokens at half the rate in Batch mode', () => {
    const usage = {
      input_tokens: 50,
      output_tokens: 1000,
      input_tokens_details: { text_tokens: 50, image_tokens: 0 },
    };
    const sync = costOfUsage('gpt-image-1.5', usage, 'sync');
    expect(sync).toBeCloseTo((50 * 5 + 1000 * 32) / 1e6, 9);
    expect(costOfUsage('gpt-image-1.5', usage, 'batch')).toBeCloseTo(sync / 2, 9);
  });

  it('prices an image by quality and shape, and a run both ways', () => {
    expect(imagePrice({ model: 'gpt-image-1.5', size: '1:1' }, 'sync')).toBe(0.034);
    expect(imagePrice({ model: 'gpt-image-1.5', size: '3:2', params: { quality: 'high' } }, 'batch')).toBe(
      0.1,
    );
    expect(priceBothWays([{ model: 'gpt-image-1.5', size: '1:1', n: 2 }])).toEqual({
      batch: 0.03,
      sync: 0.07,
    });
  });
});
