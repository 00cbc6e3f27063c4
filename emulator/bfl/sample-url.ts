// `result.sample`: a signed delivery URL, as BFL hands out (Azure Blob shared-access signatures
// on delivery-*.bfl.ai, "valid for 10 minutes"). The emulator's URL is
// `{delivery}/results/{task id}/sample.{ext}?se={expiry, ISO 8601}&sp=r&sr=b&sig={signature}`:
// the expiry travels in the URL and the signature covers it, so the URL alone says whether it is
// still good, a tampered expiry is refused, and a restarted emulator (same seed) honours the URLs
// it gave out before.
//
// Refusals are the XML a blob host answers: 403 AuthenticationFailed for a bad or expired
// signature (or 404 BlobNotFound for an expired one, a knob), 404 BlobNotFound once the task is gone.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { OutputFormat } from './models.js';

export const DELIVERY_PREFIX = '/results/';

export interface SampleRef {
  taskId: string;
  format: OutputFormat;
  /** Milliseconds since the epoch after which the URL is refused. */
  expiresAt: number;
}

export class SampleSigner {
  readonly #key: Buffer;

  constructor(seed: number) {
    this.#key = createHash('sha256').update(`pixelmill-bfl-sample/${seed}`).digest();
  }

  url(base: string, ref: SampleRef): string {
    const se = new Date(ref.expiresAt).toISOString();
    const sig = this.#sign(ref.taskId, ref.format, se);
    return `${base}${DELIVERY_PREFIX}${ref.taskId}/sample.${ref.format}?se=${encodeURIComponent(se)}&sp=r&sr=b&sig=${sig}`;
  }

  /**
   * Reads the path after DELIVERY_PREFIX and the query of a delivery request: the task it names,
   * or why the host refuses it before looking the blob up.
   */
  check(
    rest: string,
    query: URLSearchParams,
  ): { ref: SampleRef } | { refusal: 'not_found' | 'bad_signature' } {
    const match = /^([A-Za-z0-9-]{1,64})\/sample\.(jpeg|png|webp)$/.exec(rest);
    if (!match) return { refusal: 'not_found' };
    const taskId = match[1]!;
    const format = match[2] as OutputFormat;
    const se = query.get('se');
    const sig = query.get('sig');
    const expiresAt = se === null ? NaN : Date.parse(se);
    if (se === null || sig === null || Number.isNaN(expiresAt)) return { refusal: 'bad_signature' };
    const expected = Buffer.from(this.#sign(taskId, format, se));
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given))
      return { refusal: 'bad_signature' };
    return { ref: { taskId, format, expiresAt } };
  }

  #sign(taskId: string, format: string, se: string): string {
    return createHmac('sha256', this.#key).update(`${taskId}\n${format}\n${se}`).digest('base64url');
  }
}

const CONTENT_TYPES: Record<OutputFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
};

export function contentTypeOf(format: OutputFormat): string {
  return CONTENT_TYPES[format];
}

function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

function blobError(code: string, message: string, now: number, requestId: string, detail?: string): string {
  const extra =
    detail === undefined ? '' : `<AuthenticationErrorDetail>${detail}</AuthenticationErrorDetail>`;
  return (
    `<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>${message}\n` +
    `RequestId:${requestId}\nTime:${new Date(now).toISOString()}</Message>${extra}</Error>`
  );
}

/** The body of a 403 for a signature that does not match (or is missing). */
export function badSignatureXml(now: number, requestId: string): string {
  return blobError(
    'AuthenticationFailed',
    'Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.',
    now,
    requestId,
    'Signature did not match.',
  );
}

/** The body of a 403 for a signature whose expiry has passed. */
export function expiredSignatureXml(now: number, requestId: string, expiresAt: number): string {
  return blobError(
    'AuthenticationFailed',
    'Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.',
    now,
    requestId,
    `Signature not valid in the specified time frame: Start [] - Expiry [${httpDate(expiresAt)}] - Current [${httpDate(now)}]`,
  );
}

export function blobNotFoundXml(now: number, requestId: string): string {
  return blobError('BlobNotFound', 'The specified blob does not exist.', now, requestId);
}
