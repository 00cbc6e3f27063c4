// The Replicate emulator's pure parts, without a server: header formats (Prefer, Cancel-After),
// input validation against a model schema, the list cursor, the request limiter, and the
// Standard Webhooks signature (checked here against an independent HMAC).
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REPLICATE_CONFIG } from '../emulator/replicate/config.js';
import {
  decodeCursor,
  encodeCursor,
  paginate,
  parsePosition,
  positionOf,
  type Cursor,
} from '../emulator/replicate/cursor.js';
import { parseCancelAfter, parsePrefer } from '../emulator/replicate/headers.js';
import { validateInput, withDefaults } from '../emulator/replicate/input-schema.js';
import { RequestLimiter, throttledDetail } from '../emulator/replicate/limits.js';
import { DEFAULT_MODELS, imagePlan } from '../emulator/replicate/models.js';
import { isWebhookUri, webhookSignature } from '../emulator/replicate/signing.js';

describe('Prefer: wait', () => {
  it('reads wait and wait=n, holds n to 60 and ignores what it does not understand', () => {
    expect(parsePrefer(undefined)).toBeUndefined();
    expect(parsePrefer('wait')).toEqual({ seconds: 60, applied: 'wait' });
    expect(parsePrefer('wait=5')).toEqual({ seconds: 5, applied: 'wait=5' });
    expect(parsePrefer('respond-async, wait=10')).toEqual({ seconds: 10, applied: 'wait=10' });
    expect(parsePrefer('wait=600')).toEqual({ seconds: 60, applied: 'wait=60' });
    expect(parsePrefer('wait=0')).toBeUndefined();
    expect(parsePrefer('wait=abc')).toBeUndefined();
    expect(parsePrefer('return=minimal')).toBeUndefined();
  });
});

describe('Cancel-After', () => {
  it('reads seconds, minutes, hours and their combinations', () => {
    expect(parseCancelAfter('30')).toEqual({ ok: true, seconds: 30 });
    expect(parseCancelAfter('90s')).toEqual({ ok: true, seconds: 90 });
    expect(parseCancelAfter('5m')).toEqual({ ok: true, seconds: 300 });
    expect(parseCancelAfter('1h')).toEqual({ ok: true, seconds: 3600 });
    expect(parseCancelAfter('2h30m')).toEqual({ ok: true, seconds: 9000 });
    expect(parseCancelAfter('1h30m45s')).toEqual({ ok: true, seconds: 5445 });
  });

  it('refuses what is not a duration, and anything under 5 seconds', () => {
    for (const bad of ['', 'soon', '5x', '-5s', '1.5m', 'm'])
      expect(parseCancelAfter(bad).ok, bad).toBe(false);
    expect(parseCancelAfter('4s')).toMatchObject({ ok: false, reason: expect.stringContaining('5 seconds') });
    expect(parseCancelAfter('5s')).toEqual({ ok: true, seconds: 5 });
  });
});

describe('input validation', () => {
  const schnell = DEFAULT_MODELS.find((m) => m.name === 'black-forest-labs/flux-schnell')!;

  it('accepts a valid input and names every problem of an invalid one', () => {
    expect(validateInput({ prompt: 'a fox', num_outputs: 4, aspect_ratio: '16:9' }, schnell.input)).toEqual(
      [],
    );
    expect(
      validateInput({ num_outputs: 5, aspect_ratio: '7:3', seed: 'x', output_quality: -1 }, schnell.input),
    ).toEqual([
      { type: 'required', field: 'input', description: 'prompt is required' },
      { type: 'enum', field: 'input.aspect_ratio', description: expect.stringContaining('"16:9"') },
      { type: 'number_lte', field: 'input.num_outputs', description: 'Must be less than or equal to 4' },
      {
        type: 'invalid_type',
        field: 'input.seed',
        description: 'Invalid type. Expected: integer, given: string',
      },
      {
        type: 'number_gte',
        field: 'input.output_quality',
        description: 'Must be greater than or equal to 0',
      },
    ]);
    expect(validateInput({ prompt: 'a', num_outputs: 1.5 }, schnell.input)).toEqual([
      {
        type: 'invalid_type',
        field: 'input.num_outputs',
        description: 'Invalid type. Expected: integer, given: number',
      },
    ]);
  });

  it('plans images from the input with the defaults applied', () => {
    expect(imagePlan(schnell, withDefaults({ prompt: 'p' }, schnell.input))).toEqual({
      prompt: 'p',
      outputKind: 'list',
      count: 1,
      width: 1024,
      height: 1024,
      format: 'webp',
      safetyCheckerOff: false,
    });
    const pro = DEFAULT_MODELS.find((m) => m.name === 'black-forest-labs/flux-1.1-pro')!;
    expect(
      imagePlan(
        pro,
        withDefaults({ prompt: 'p', aspect_ratio: 'custom', width: 1440, height: 960 }, pro.input),
      ),
    ).toMatchObject({ count: 1, width: 1440, height: 960, format: 'webp' });
    expect(
      imagePlan(
        schnell,
        withDefaults({ prompt: 'p', aspect_ratio: '16:9', megapixels: '0.25' }, schnell.input),
      ),
    ).toMatchObject({
      width: 672,
      height: 384,
    });
    const sdxl = DEFAULT_MODELS.find((m) => m.name === 'stability-ai/sdxl')!;
    expect(imagePlan(sdxl, withDefaults({ num_outputs: 3 }, sdxl.input))).toMatchObject({
      prompt: 'An astronaut riding a rainbow unicorn',
      count: 3,
      format: 'png',
    });
  });
});

describe('list cursor', () => {
  it('encodes as Django REST framework does and decodes back', () => {
    // The cursor of the API reference's example, taken apart.
    const cursor = decodeCursor('cD0yMDIzLTA5LTA4KzE2JTNBMTklM0EzNC43OTE4NTklMkIwMCUzQTAw');
    expect(cursor).toEqual({ offset: 0, reverse: false, position: '2023-09-08 16:19:34.791859+00:00' });
    expect(encodeCursor(cursor!)).toBe('cD0yMDIzLTA5LTA4KzE2JTNBMTklM0EzNC43OTE4NTklMkIwMCUzQTAw');
    expect(parsePosition(positionOf(Date.UTC(2026, 0, 1, 12, 0, 0, 5)))).toBe(
      Date.UTC(2026, 0, 1, 12, 0, 0, 5),
    );
    expect(positionOf(Date.UTC(2026, 0, 1))).toBe('2026-01-01 00:00:00+00:00');
    expect(decodeCursor('not base64!')).toBeUndefined();
    expect(decodeCursor(Buffer.from('o=-1').toString('base64'))).toBeUndefined();
    expect(decodeCursor(Buffer.from('p=yesterday').toString('base64'))).toBeUndefined();
  });

  /** Walks every page forward, then back from the last with `previous`; returns the ids seen. */
  function walk(items: { id: number; t: number }[], pageSize: number) {
    const list = [...items].sort((a, b) => b.t - a.t || b.id - a.id);
    const forward: number[][] = [];
    let cursor: Cursor | undefined;
    for (let guard = 0; guard < 100; guard++) {
      const { page, next } = paginate(list, cursor, pageSize, (i) => i.t);
      forward.push(page.map((i) => i.id));
      if (!next) break;
      cursor = decodeCursor(encodeCursor(next));
    }
    // From the last page, `previous` goes back towards the first.
    const backward: number[][] = [];
    let back = paginate(list, cursor, pageSize, (i) => i.t).previous;
    for (let guard = 0; back && guard < 100; guard++) {
      const result = paginate(list, back, pageSize, (i) => i.t);
      backward.push(result.page.map((i) => i.id));
      back = result.previous;
    }
    return { list: list.map((i) => i.id), forward, backward };
  }

  it('visits every item once, newest first, with distinct times', () => {
    const items = Array.from({ length: 23 }, (_, id) => ({ id, t: 1000 + id }));
    const { list, forward, backward } = walk(items, 5);
    expect(forward.flat()).toEqual(list);
    expect(forward.map((p) => p.length)).toEqual([5, 5, 5, 5, 3]);
    expect(backward).toEqual(forward.slice(0, -1).reverse());
  });

  it('visits every item once when many share one created time', () => {
    const items = Array.from({ length: 17 }, (_, id) => ({ id, t: 1000 + Math.floor(id / 6) }));
    const { list, forward } = walk(items, 4);
    expect(forward.flat()).toEqual(list);
  });

  it('keeps later pages stable when predictions are created between pages', () => {
    const items = Array.from({ length: 10 }, (_, id) => ({ id, t: 1000 + id }));
    const newestFirst = () => [...items].sort((a, b) => b.t - a.t);
    const first = paginate(newestFirst(), undefined, 4, (i) => i.t);
    items.push({ id: 100, t: 5000 }, { id: 101, t: 5001 });
    const second = paginate(newestFirst(), first.next!, 4, (i) => i.t);
    expect(first.page.map((i) => i.id)).toEqual([9, 8, 7, 6]);
    expect(second.page.map((i) => i.id)).toEqual([5, 4, 3, 2]);
    // Going back from the second page shows the newer items as well as the first page.
    const back = paginate(newestFirst(), second.previous!, 4, (i) => i.t);
    expect(back.page.map((i) => i.id)).toEqual([9, 8, 7, 6]);
    expect(back.previous).not.toBeNull();
    expect(paginate(newestFirst(), back.previous!, 4, (i) => i.t).page.map((i) => i.id)).toEqual([101, 100]);
  });

  it('says there is no next page on the last one and no previous page on the first', () => {
    const items = [{ id: 1, t: 1 }];
    expect(paginate(items, undefined, 100, (i) => i.t)).toEqual({ page: items, next: null, previous: null });
    expect(paginate([], undefined, 100, (i: { t: number }) => i.t)).toEqual({
      page: [],
      next: null,
      previous: null,
    });
  });
});

describe('request limiter', () => {
  const limits = DEFAULT_REPLICATE_CONFIG.limits;

  it('lets a burst through, then refills at the rate', () => {
    const limiter = new RequestLimiter({
      ...limits,
      create: { requests: 600, window_seconds: 60, burst: 3 },
    });
    const t = 1_000_000;
    expect(limiter.take(0, 'create', false, t)).toEqual({ ok: true, remaining: 2, resetSeconds: 1 });
    expect(limiter.take(0, 'create', false, t)).toMatchObject({ ok: true, remaining: 1 });
    expect(limiter.take(0, 'create', false, t)).toMatchObject({ ok: true, remaining: 0 });
    expect(limiter.take(0, 'create', false, t)).toEqual({ ok: false, waitSeconds: 1, lowCredit: false });
    // Another token, and the other class, have their own buckets.
    expect(limiter.take(1, 'create', false, t)).toMatchObject({ ok: true });
    expect(limiter.take(0, 'other', false, t)).toMatchObject({ ok: true });
    // 10 a second: one more after 100 ms.
    expect(limiter.take(0, 'create', false, t + 100)).toMatchObject({ ok: true, remaining: 0 });
    expect(limiter.take(0, 'create', false, t + 100)).toMatchObject({ ok: false });
  });

  it('uses the low-credit bucket for creates only, and words its 429 as the API does', () => {
    const limiter = new RequestLimiter(limits);
    const t = 1_000_000;
    expect(limiter.take(0, 'create', true, t)).toMatchObject({ ok: true });
    const refused = limiter.take(0, 'create', true, t);
    expect(refused).toEqual({ ok: false, waitSeconds: 10, lowCredit: true });
    expect(throttledDetail(limits, refused as never)).toBe(
      'Request was throttled. Your rate limit for creating predictions is reduced to 6 requests per minute with a burst of 1 requests while you have less than $5.0 in credit.',
    );
    expect(limiter.take(0, 'other', true, t)).toMatchObject({ ok: true });
    expect(throttledDetail(limits, { ok: false, waitSeconds: 30, lowCredit: false })).toBe(
      'Request was throttled. Your rate limit resets in ~30s.',
    );
    expect(
      throttledDetail(
        { ...limits, throttle_message: 'expected_available' },
        { ok: false, waitSeconds: 1, lowCredit: false },
      ),
    ).toBe('Request was throttled. Expected available in 1 second.');
  });

  it('holds a lowered limit at once and keeps the tokens a bucket holds', () => {
    const limiter = new RequestLimiter(limits);
    const t = 1_000_000;
    for (let i = 0; i < 10; i++) expect(limiter.take(0, 'create', false, t).ok).toBe(true);
    limiter.setLimits({ ...limits, create: { requests: 60, window_seconds: 60, burst: 2 } }, t);
    expect(limiter.take(0, 'create', false, t).ok).toBe(true);
    expect(limiter.take(0, 'create', false, t).ok).toBe(true);
    expect(limiter.take(0, 'create', false, t)).toEqual({ ok: false, waitSeconds: 1, lowCredit: false });
  });
});

describe('webhook signature', () => {
  it('is Standard Webhooks: HMAC-SHA256 of id.timestamp.body with the decoded secret', () => {
    const key = Buffer.from('a key of some bytes \x00\xff');
    const secret = `whsec_${key.toString('base64')}`;
    const body = '{"id":"p1","status":"succeeded","note":"ünï"}';
    const expected = createHmac('sha256', key).update(`msg_1.1700000000.${body}`).digest('base64');
    expect(webhookSignature(secret, 'msg_1', 1700000000, body)).toBe(`v1,${expected}`);
  });

  it('takes only absolute http(s) URIs in ASCII', () => {
    expect(isWebhookUri('https://example.com/hook?x=1', true)).toBe(true);
    expect(isWebhookUri('http://127.0.0.1:8080/hook', false)).toBe(true);
    expect(isWebhookUri('http://127.0.0.1:8080/hook', true)).toBe(false);
    for (const bad of [
      'https://Ï',
      'https://exämple.com/',
      'ftp://x/y',
      '/relative',
      'https:///nohost',
      'https://a b/',
    ])
      expect(isWebhookUri(bad, false), bad).toBe(false);
  });
});
