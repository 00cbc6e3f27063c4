// BFL's statuses in pixelmill's words, the sample URL's expiry, the hosts the key may go to, and
// the capabilities the shard drives.
import { describe, expect, it } from 'vitest';
import { bfl } from '../providers/bfl/index.js';
import { bflTrustsOrigin, registrableDomain } from '../providers/bfl/hosts.js';
import { SAMPLE_URL_LIFE_MS, sampleExpiry, taskStateOf } from '../providers/bfl/task-result.js';

const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);
const SAMPLE = 'https://delivery-eu1.bfl.ai/results/abc/sample.jpeg?sp=r&sr=b&sig=x';

describe('BFL statuses', () => {
  it('Ready is completed with its sample URL, living 10 minutes from now', () => {
    expect(taskStateOf({ status: 'Ready', result: { sample: SAMPLE, seed: 1 } }, NOW)).toEqual({
      status: 'completed',
      result: { status: 'completed', urls: [SAMPLE], expiresAt: NOW + 10 * 60_000 },
    });
    // A Ready without a sample says nothing to collect: the caller decides what that means.
    expect(taskStateOf({ status: 'Ready', result: null }, NOW)).toEqual({ status: 'completed' });
  });

  it('Pending is pending, Task not found not_found, an unknown status carried as it came', () => {
    expect(taskStateOf({ status: 'Pending', result: null }, NOW)).toEqual({ status: 'pending' });
    expect(taskStateOf({ status: 'Task not found' }, NOW)).toEqual({ status: 'not_found' });
    expect(taskStateOf({ status: 'Queued' }, NOW)).toEqual({ status: 'Queued' });
  });

  it.each([
    [
      { status: 'Request Moderated', details: { 'Moderation Reasons': ['Input prompt'] } },
      {
        type: 'content_policy_violation',
        code: 'Request Moderated',
        message: "BFL's moderation refused the request: Input prompt",
      },
    ],
    [
      { status: 'Content Moderated', details: null },
      {
        type: 'content_policy_violation',
        code: 'Content Moderated',
        message: "BFL's moderation refused the generated image",
      },
    ],
    [
      { status: 'Error', details: { error: 'Generation failed' } },
      { type: 'generation_error', code: 'Error', message: "BFL's generation failed: Generation failed" },
    ],
    // BFL's integration notes: an Error whose `error` is a code word.
    [
      { status: 'Error', error: 'content_policy_violation', message: 'The prompt violated content policy' },
      {
        type: 'content_policy_violation',
        code: 'content_policy_violation',
        message: "BFL's generation failed: The prompt violated content policy",
      },
    ],
    [
      { status: 'Error', error: 'internal_error' },
      {
        type: 'generation_error',
        code: 'internal_error',
        message: "BFL's generation failed: internal_error",
      },
    ],
    // The smaller webhook notice names BFL's status in `error`.
    [
      { status: 'FAILED', error: 'Content Moderated' },
      {
        type: 'content_policy_violation',
        code: 'Content Moderated',
        message: "BFL's moderation refused the generated image",
      },
    ],
    [{ status: 'FAILED' }, { type: 'generation_error', code: 'FAILED', message: "BFL's generation failed" }],
  ])('%j is failed with %j', (word, error) => {
    // BFL does not charge moderated tasks; what an Error costs it does not say.
    const charge = error.code.endsWith('Moderated') ? { creditsCost: 0 } : {};
    expect(taskStateOf(word, NOW)).toEqual({
      status: 'failed',
      result: { status: 'failed', error, ...charge },
    });
  });

  it('a cost in the answer is the result cost', () => {
    expect(
      taskStateOf({ status: 'Ready', result: { sample: SAMPLE }, cost: 4 }, NOW).result?.creditsCost,
    ).toBe(4);
  });
});

describe('the sample URL expiry', () => {
  it('is 10 minutes from when it was handed out, or sooner when its own se says so', () => {
    expect(SAMPLE_URL_LIFE_MS).toBe(600_000);
    expect(sampleExpiry(SAMPLE, NOW)).toBe(NOW + 600_000);
    const soon = new Date(NOW + 60_000).toISOString();
    expect(sampleExpiry(`${SAMPLE}&se=${encodeURIComponent(soon)}`, NOW)).toBe(NOW + 60_000);
    const later = new Date(NOW + 3_600_000).toISOString();
    expect(sampleExpiry(`${SAMPLE}&se=${encodeURIComponent(later)}`, NOW)).toBe(NOW + 600_000);
    expect(sampleExpiry(`${SAMPLE}&se=never`, NOW)).toBe(NOW + 600_000);
    expect(sampleExpiry('not a url', NOW)).toBe(NOW + 600_000);
  });
});

describe('the hosts the key may go to', () => {
  const trusts = (base: string, url: string) => bflTrustsOrigin(new URL(base))(new URL(url));

  it("trusts BFL's regional hosts for a base on BFL's domain", () => {
    for (const host of ['api.us1.bfl.ai', 'api.eu.bfl.ai', 'api.bfl.ai', 'bfl.ai'])
      expect(trusts('https://api.bfl.ai/', `https://${host}/v1/get_result?id=1`), host).toBe(true);
  });

  it('refuses other domains, look-alikes, another scheme or port, and credentials', () => {
    for (const url of [
      'https://evil.example/v1/get_result',
      'https://bfl.ai.evil.example/v1/get_result',
      'https://evilbfl.ai/v1/get_result',
      'http://api.us1.bfl.ai/v1/get_result',
      'https://api.us1.bfl.ai:8443/v1/get_result',
      'https://user:pw@api.us1.bfl.ai/v1/get_result',
    ])
      expect(trusts('https://api.bfl.ai/', url), url).toBe(false);
  });

  it('for a loopback base (the emulator), trusts loopback hosts on the same port only', () => {
    expect(trusts('http://127.0.0.1:8789/', 'http://localhost:8789/v1/get_result?id=1')).toBe(true);
    expect(trusts('http://127.0.0.1:8789/', 'http://127.0.0.2:8789/v1/get_result?id=1')).toBe(true);
    expect(trusts('http://127.0.0.1:8789/', 'http://127.0.0.1:8790/v1/get_result?id=1')).toBe(false);
    expect(trusts('http://127.0.0.1:8789/', 'http://10.0.0.1:8789/v1/get_result?id=1')).toBe(false);
  });

  it('an IP or single-label base trusts its own origin only; a country-code domain keeps three labels', () => {
    expect(trusts('https://10.0.0.5/', 'https://10.0.0.5/v1/x')).toBe(true);
    expect(trusts('https://10.0.0.5/', 'https://10.0.0.6/v1/x')).toBe(false);
    expect(registrableDomain('gateway')).toBeUndefined();
    expect(registrableDomain('bfl.proxy.example.co.uk')).toBe('example.co.uk');
    expect(registrableDomain('api.bfl.ai')).toBe('bfl.ai');
    expect(trusts('https://bfl.example.co.uk/', 'https://other.co.uk/v1/x')).toBe(false);
  });

  it('a base on any other domain (a gateway on a shared host) trusts its own origin, not its siblings', () => {
    expect(trusts('https://bfl-proxy.herokuapp.com/', 'https://bfl-proxy.herokuapp.com/v1/x')).toBe(true);
    expect(trusts('https://bfl-proxy.herokuapp.com/', 'https://someone-else.herokuapp.com/v1/x')).toBe(false);
    expect(trusts('https://gw.corp.example/', 'https://eu.corp.example/v1/x')).toBe(false);
  });
});

describe('the BFL provider', () => {
  it('says what the shard drives: single lookups carrying the result, a concurrency of 24, 10-minute results', () => {
    expect(bfl.capabilities).toEqual({
      lookup: { kind: 'single' },
      resultInLookup: true,
      webhooks: { resultInPayload: 'sometimes' },
      limits: { rate: false, concurrency: true, documentedConcurrency: 24, overConcurrency: 'refused' },
      resultRetentionMs: 600_000,
      cancel: false,
      idempotencyKeys: false,
      reportsCost: true,
      startDeadline: false,
      maxImagesPerTask: 1,
    });
    expect(bfl.defaultModel).toBe('flux-pro-1.1');
  });
});
