// POST /v1/images/generations (spec 4.1): validate the generation request (2.1), check credits,
// create the task and acknowledge it with the `{code, data:[...]}` envelope (2.2). A request with
// an Idempotency-Key the account used before is answered with that task (docs/emulator.md).
//
// Validation reports the first problem in the order of the spec's field table, each with its own
// code and `param`. Unknown fields are ignored and `null` counts as absent, as OpenAI-style
// gateways do. `language` is read before authentication (server.ts) so that every error of the
// request, 401 and 429 included, is in the caller's language.
import { createHash } from 'node:crypto';
import { jsonObjectBody, type ParsedBody } from '../body.js';
import type { ApiCall, ApiReply, EmulatorContext } from '../context.js';
import { EmulatorApiError } from '../errors.js';
import { parseLanguage } from '../i18n.js';
import { IMAGE_FAULT_COUNTERS, imageFaultOf } from '../images/faults.js';
import {
  DEFAULT_MODEL,
  LANGUAGES,
  MAX_IMAGE_URLS,
  RESOLUTIONS,
  SUBMITTED,
  type Language,
  type Resolution,
  type SubmitAckItem,
} from '../wire.js';

export interface ValidSubmit {
  prompt: string;
  size: string;
  resolution: Resolution;
  n: number;
  webhook: string | undefined;
  language: Language | undefined;
  imageUrls: string[];
}

/** The language a submit body asks for, when the body parses and names a supported one. */
export function submitLanguage(body: ParsedBody): Language | undefined {
  if (body.kind !== 'json' || typeof body.value !== 'object' || body.value === null) return undefined;
  return parseLanguage((body.value as Record<string, unknown>).language);
}

// The spec types `webhook` and `image_urls` as URIs: RFC 3986, checked on the string as sent. It is
// ASCII only (an IDN host comes as punycode, other octets percent-encoded, `%` always followed by two
// hex digits), and an http(s) URI has an authority (`//host`). WHATWG's URL parser cannot tell:
// it punycodes `https://Ï`, percent-encodes a space or `é` and trims surrounding blanks, silently.
// It still decides what http needs beyond the grammar (a non-empty host, a port in range, a
// well-formed IPv6 address), which the pattern below leaves loose.
const URI_CHARS = "A-Za-z0-9\\-._~!$&'()*+,;="; // unreserved and sub-delims
const uriPart = (extra: string) => `(?:[${URI_CHARS}${extra}]|%[0-9A-Fa-f]{2})*`;
const HTTP_URI = new RegExp(
  `^https?://(?:${uriPart(':')}@)?(?:\\[[0-9A-Fa-f:.]+\\]|${uriPart('')})(?::[0-9]*)?` +
    `(?:/${uriPart(':@')})*(?:\\?${uriPart(':@/?')})?(?:#${uriPart(':@/?')})?$`,
  'i',
);

/** An http(s) URI as RFC 3986 writes it, that WHATWG's parser takes too. */
function isHttpUri(value: unknown): value is string {
  return typeof value === 'string' && HTTP_URI.test(value) && URL.canParse(value);
}

export function validateSubmit(body: ParsedBody, ctx: EmulatorContext): ValidSubmit {
  const fields = jsonObjectBody(body);
  const given = (name: string): unknown => (fields[name] === null ? undefined : fields[name]);
  const { max_n: maxN, sizes } = ctx.config;

  const prompt = given('prompt');
  if (prompt === undefined) throw new EmulatorApiError('missing_prompt');
  if (typeof prompt !== 'string') throw new EmulatorApiError('invalid_prompt');
  if (prompt.trim() === '') throw new EmulatorApiError('empty_prompt');

  const model = given('model');
  if (model !== undefined && model !== DEFAULT_MODEL)
    throw new EmulatorApiError('invalid_model', { allowed: DEFAULT_MODEL });

  const size = given('size') ?? '1:1';
  if (typeof size !== 'string' || !sizes.includes(size))
    throw new EmulatorApiError('invalid_size', { allowed: sizes.join(', ') });

  const resolution = given('resolution') ?? '1K';
  if (!(RESOLUTIONS as readonly unknown[]).includes(resolution)) {
    throw new EmulatorApiError('invalid_resolution', { allowed: RESOLUTIONS.join(', ') });
  }

  const n = given('n') ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > maxN)
    throw new EmulatorApiError('invalid_n', { max: maxN });

  const imageUrls = given('image_urls');
  if (imageUrls !== undefined) {
    if (!Array.isArray(imageUrls)) throw new EmulatorApiError('invalid_image_urls');
    if (imageUrls.length > MAX_IMAGE_URLS)
      throw new EmulatorApiError('too_many_image_urls', { max: MAX_IMAGE_URLS });
    if (!imageUrls.every(isHttpUri)) throw new EmulatorApiError('invalid_image_urls');
  }

  const webhook = given('webhook');
  if (webhook !== undefined && !isHttpUri(webhook)) throw new EmulatorApiError('invalid_webhook');

  const language = given('language');
  if (language !== undefined && parseLanguage(language) === undefined) {
    throw new EmulatorApiError('invalid_language', { allowed: LANGUAGES.join(', ') });
  }

  return {
    prompt,
    size,
    resolution: resolution as Resolution,
    n,
    webhook: webhook as string | undefined,
    language: parseLanguage(language),
    imageUrls: (imageUrls as string[] | undefined) ?? [],
  };
}

/** The longest Idempotency-Key taken (Stripe's limit). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** The header's key, checked; undefined when the request sent none or keys are switched off. */
function idempotencyKeyOf(ctx: EmulatorContext, call: ApiCall): string | undefined {
  const key = call.idempotencyKey;
  if (key === undefined || !ctx.config.idempotency.enabled) return undefined;
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !PRINTABLE_ASCII.test(key))
    throw new EmulatorApiError('invalid_idempotency_key', { max: MAX_IDEMPOTENCY_KEY_LENGTH });
  return key;
}

/** What a replay must ask for again: the request as validated, so formatting does not matter. */
function fingerprintOf(request: Omit<ValidSubmit, 'imageUrls'>, imageUrls: unknown): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        request.prompt,
        request.size,
        request.resolution,
        request.n,
        request.webhook ?? null,
        request.language ?? null,
        imageUrls ?? null,
      ]),
    )
    .digest('hex');
}

const acknowledge = (taskId: string): ApiReply => {
  const data: SubmitAckItem[] = [{ status: SUBMITTED, task_id: taskId }];
  return { status: 200, body: { code: 200, data } };
};

export async function handleSubmit(ctx: EmulatorContext, call: ApiCall): Promise<ApiReply> {
  const key = idempotencyKeyOf(ctx, call);
  const { imageUrls, ...request } = validateSubmit(call.body, ctx);
  const account = call.key.account;
  // A key seen before answers with its task, charging nothing; with another request, a 409.
  // Only a submit that created a task is remembered: one that failed created nothing to replay.
  const idempotency =
    key === undefined ? undefined : { key, fingerprint: fingerprintOf(request, imageUrlsOf(call)) };
  const replay = (): ApiReply | undefined => {
    if (!idempotency) return undefined;
    const earlier = ctx.store.findByIdempotencyKey(account, idempotency.key);
    if (earlier && earlier.idempotency?.fingerprint !== idempotency.fingerprint)
      throw new EmulatorApiError('idempotency_key_reused');
    if (!earlier) return undefined;
    ctx.stats.idempotentReplays++;
    return acknowledge(earlier.id);
  };
  const replayed = replay();
  if (replayed) return replayed;
  const prompt = request.prompt.toLowerCase();
  if (ctx.config.faults.poisoned_prompt_words.some((word) => prompt.includes(word.toLowerCase()))) {
    ctx.stats.recordFault('poisoned_submit');
    throw new EmulatorApiError('build_request_failed');
  }
  const reference = await ctx.references.fetchAll(imageUrls);
  // The same key may have created its task while this one downloaded.
  const replayedLate = replay();
  if (replayedLate) return replayedLate;
  const { store } = ctx;
  const cost = store.priceOf(request.n, request.resolution);
  store.settle();
  if (account.credits < cost)
    throw new EmulatorApiError('insufficient_credits', { cost, balance: account.credits });
  const record = store.create({
    account,
    ...request,
    ...(idempotency ? { idempotency } : {}),
    ...(reference ? { reference } : {}),
  });
  if (record.stuck) ctx.stats.recordFault('stuck_task');
  else if (!record.failure) {
    const fault = imageFaultOf(ctx.config.seed, record.id, ctx.config.faults);
    if (fault) ctx.stats.recordFault(IMAGE_FAULT_COUNTERS[fault]);
  }
  ctx.notifier.schedule(record);
  return acknowledge(record.id);
}

function imageUrlsOf(call: ApiCall): unknown {
  const body = call.body;
  return body.kind === 'json' && typeof body.value === 'object' && body.value !== null
    ? (body.value as Record<string, unknown>).image_urls
    : undefined;
}
