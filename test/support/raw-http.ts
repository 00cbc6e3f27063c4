// Raw HTTP for the emulator tests: any method and headers, a body sent as JSON or as given, and the
// answer read whole (its text, and its JSON when it is JSON). Each emulator's helper (call in
// emulator.ts, bfl in emulator-bfl.ts, fal in ../emulator-fal-harness.ts) adds its own auth header.
import { request } from 'undici';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary envelopes
}

export interface RawSend {
  /** Any method token; default GET, or POST when there is a body. */
  method?: string;
  headers: Record<string, string>;
  /** An object is sent as JSON (content-type application/json unless given); a string or Buffer as is. */
  body?: unknown;
  /** Closes the connection after the answer instead of keeping it alive. */
  reset?: boolean;
}

export async function sendRaw(url: string, options: RawSend): Promise<RawResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined;
  if (options.body !== undefined) {
    body =
      typeof options.body === 'string' || Buffer.isBuffer(options.body)
        ? options.body
        : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await request(url, {
    method: options.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    body,
    ...(options.reset ? { reset: true } : {}),
  });
  const text = await response.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, headers: response.headers, text, json };
}
