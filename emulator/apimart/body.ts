// Request bodies of the API routes: the raw bytes (read, size-capped, by http.ts) turned into a
// ParsedBody, and the 400s every JSON-object body shares (too large, not JSON, not an object).
//
// JSON is UTF-8 by definition (RFC 8259 8.1). Bytes that are not valid UTF-8 are rejected rather
// than decoded with U+FFFD replacements, which would silently change the prompt a caller paid for.
import { EmulatorApiError } from './errors.js';
import { MAX_BODY_BYTES } from '../core/http.js';

export type ParsedBody =
  { kind: 'none' } | { kind: 'too_large' } | { kind: 'invalid_json' } | { kind: 'json'; value: unknown };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** `undefined` stands for a body over the size limit (see readBody). */
export function parseBody(buffer: Buffer | undefined): ParsedBody {
  if (buffer === undefined) return { kind: 'too_large' };
  try {
    return { kind: 'json', value: JSON.parse(strictUtf8.decode(buffer)) as unknown };
  } catch {
    return { kind: 'invalid_json' };
  }
}

/** The body as a JSON object, or the 400 that says why it is not one. */
export function jsonObjectBody(body: ParsedBody): Record<string, unknown> {
  if (body.kind === 'too_large') throw new EmulatorApiError('body_too_large', { max: MAX_BODY_BYTES });
  if (body.kind !== 'json') throw new EmulatorApiError('invalid_json');
  const { value } = body;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new EmulatorApiError('invalid_body');
  return value as Record<string, unknown>;
}
