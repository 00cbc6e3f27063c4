// The HTTP side every provider's client shares: one keep-alive undici pool per account, the key in
// the provider's auth header and nowhere else (redacted from every message), JSON calls classified
// once (classify.ts), result downloads without credentials, and counts of calls by endpoint.
// A provider's client (providers/*/client.ts) adds only its paths, wire shapes and readings.
import { Agent, interceptors, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { UserError } from '../common/errors.js';
import type { RequestContext } from './classify.js';
import { downloadResult, RESULT_ENDPOINT, type DownloadedResult } from './download.js';
import { InvalidRequestError, InvalidResponseError } from './errors.js';
import { followEvents, type EventsCall } from './event-stream.js';
import { callJson, type JsonCall } from './http.js';

export interface ApiHttpOptions {
  /** The provider's base address; paths are resolved against it (a base path is kept). */
  baseUrl: string;
  apiKey: string;
  /** The headers that carry the key (`Authorization: Bearer`, fal's `Key`, BFL's `x-key`). */
  authHeaders: (apiKey: string) => Record<string, string>;
  /**
   * Other origins the key may be sent to (BFL's regional polling hosts); by default only the
   * base URL's origin. A URL the provider returns on another origin is refused, not called.
   */
  trustsOrigin?: (url: URL) => boolean;
  /** Use this dispatcher instead of an own pool; `close()` then leaves it open. */
  dispatcher?: Dispatcher;
  /** Keep-alive connections per origin (default 16). */
  connections?: number;
  connectTimeoutMs?: number;
  /** Time to wait for an answer's headers (default 30 s; longer for calls that hold, like Prefer: wait). */
  headersTimeoutMs?: number;
  /** Longest pause between two body chunks (default 30 s). */
  bodyTimeoutMs?: number;
  userAgent?: string;
  /** Clock for HTTP-date Retry-After values. */
  now?: () => number;
}

/** Calls made so far by endpoint template, a failed call counting in both fields. */
export interface EndpointStats {
  calls: number;
  failures: number;
}

/** One call: its endpoint template (for stats and errors) and where it goes. */
export interface ApiCall<S extends z.ZodType> extends Omit<JsonCall<S>, 'url' | 'headers'> {
  /** The template the call is counted under, e.g. `GET /v1/predictions/{id}`. */
  endpoint: string;
  /** A path relative to the base URL, or an absolute URL the provider gave (checked for its origin). */
  to: string | URL;
  query?: Record<string, string>;
  headers?: Record<string, string>;
}

/** A stream to follow: its endpoint template and where it goes, as an ApiCall's. */
export interface ApiEventsCall<T> extends Pick<EventsCall<T>, 'onData' | 'signal' | 'errorFor'> {
  endpoint: string;
  to: string;
}

const REDACTED = '[redacted]';

export class ApiHttp {
  // Private fields are invisible to util.inspect, JSON.stringify and object spreading.
  readonly #apiKey: string;
  readonly #authHeaders: Record<string, string>;
  readonly #trustsOrigin: (url: URL) => boolean;
  readonly #dispatcher: Dispatcher;
  readonly #downloads: Dispatcher;
  /** Streams hold a connection each while their task runs: a pool of their own, made when first needed. */
  #streams: Dispatcher | undefined;
  readonly #ownsDispatcher: boolean;
  readonly #userAgent: string;
  readonly #now: () => number;
  readonly #stats = new Map<string, EndpointStats>();
  readonly baseUrl: URL;

  constructor(options: ApiHttpOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
      throw new UserError('api_key_missing', 'image API key is empty');
    }
    this.#apiKey = options.apiKey;
    this.#authHeaders = options.authHeaders(options.apiKey);
    this.baseUrl = parseBaseUrl(options.baseUrl);
    const origin = this.baseUrl.origin;
    this.#trustsOrigin = options.trustsOrigin ?? ((url) => url.origin === origin);
    this.#userAgent = options.userAgent ?? 'pixelmill/0.1';
    this.#now = options.now ?? Date.now;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        connections: options.connections ?? 16,
        connectTimeout: options.connectTimeoutMs ?? 10_000,
        headersTimeout: options.headersTimeoutMs ?? 30_000,
        bodyTimeout: options.bodyTimeoutMs ?? 30_000,
        // Below Node's default server keep-alive (5 s), so we rarely reuse a socket the server is
        // closing: undici cannot replay a POST that hit such a socket, and submit must not repeat.
        keepAliveTimeout: 4_000,
      });
    // Result hosts (CDNs, object stores) may redirect; the API itself is never followed.
    this.#downloads = this.#dispatcher.compose(interceptors.redirect({ maxRedirections: 3 }));
  }

  /** Sends one JSON call with the key; resolves with the schema's output or rejects classified. */
  async call<S extends z.ZodType>(call: ApiCall<S>): Promise<z.output<S>> {
    const ctx = this.context(call.endpoint, call.to);
    if (!this.#trustsOrigin(ctx.url)) {
      throw this.rejected(ctx, `the provider pointed to ${ctx.url.origin}, which is not its API's address`);
    }
    for (const [name, value] of Object.entries(call.query ?? {})) ctx.url.searchParams.set(name, value);
    this.#count(call.endpoint, 'calls');
    try {
      return await callJson(this.#dispatcher, ctx, {
        ...call,
        url: ctx.url,
        headers: {
          ...call.headers,
          ...this.#authHeaders,
          accept: 'application/json',
          'user-agent': this.#userAgent,
        },
      });
    } catch (error) {
      this.#count(call.endpoint, 'failures');
      throw error;
    }
  }

  /** Follows a server-sent-event stream with the key until `onData` has what it needs (event-stream.ts). */
  async events<T>(call: ApiEventsCall<T>): Promise<T> {
    const ctx = this.context(call.endpoint, call.to);
    if (!this.#trustsOrigin(ctx.url)) {
      throw this.rejected(ctx, `the provider pointed to ${ctx.url.origin}, which is not its API's address`);
    }
    this.#count(call.endpoint, 'calls');
    try {
      return await followEvents(this.#streamDispatcher(), ctx, {
        ...call,
        url: ctx.url,
        headers: { ...this.#authHeaders, 'user-agent': this.#userAgent },
      });
    } catch (error) {
      this.#count(call.endpoint, 'failures');
      throw error;
    }
  }

  #streamDispatcher(): Dispatcher {
    // Connections without a cap, and no pause limit: a stream is quiet while its task waits or runs.
    if (!this.#ownsDispatcher) return this.#dispatcher;
    this.#streams ??= new Agent({ connectTimeout: 10_000, headersTimeout: 30_000, bodyTimeout: 0 });
    return this.#streams;
  }

  /** What error messages may say about a call: its endpoint, method and path (no host, no query). */
  context(endpoint: string, to: string | URL): RequestContext & { url: URL } {
    // Relative to the base so that a base path (https://host/gateway/) is kept.
    const url = typeof to === 'string' ? new URL(to.replace(/^\//, ''), this.baseUrl) : new URL(to);
    return {
      endpoint,
      url,
      target: `${endpoint.split(' ')[0]} ${url.pathname}`,
      redact: (text) => this.redact(text),
      now: this.#now,
    };
  }

  /** A call refused before sending (a request the provider would refuse, or an untrusted address). */
  rejected(ctx: RequestContext, why: string): InvalidRequestError {
    return new InvalidRequestError(`${ctx.target} not sent: ${this.redact(why)}`, { endpoint: ctx.endpoint });
  }

  /** An answer that parsed but does not hold what the call needs; counted as the endpoint's failure. */
  invalid(ctx: RequestContext, why: string, outcomeUnknown = false): InvalidResponseError {
    this.#count(ctx.endpoint, 'failures');
    return new InvalidResponseError(`${ctx.target} returned an invalid response: ${this.redact(why)}`, {
      endpoint: ctx.endpoint,
      outcomeUnknown,
    });
  }

  /** Streams a result image. No credentials are sent: the result host may be another origin. */
  async download(url: string, options: { signal?: AbortSignal } = {}): Promise<DownloadedResult> {
    this.#count(RESULT_ENDPOINT, 'calls');
    try {
      return await downloadResult(this.#downloads, url, {
        ...options,
        userAgent: this.#userAgent,
        now: this.#now,
        redact: (text) => this.redact(text),
      });
    } catch (error) {
      this.#count(RESULT_ENDPOINT, 'failures');
      throw error;
    }
  }

  /**
   * Calls made so far, by endpoint template; a failed call counts in both fields. A download
   * whose stream fails later (truncation) counts as a successful call here.
   */
  stats(): Record<string, EndpointStats> {
    return Object.fromEntries([...this.#stats].map(([endpoint, s]) => [endpoint, { ...s }]));
  }

  /** Closes the connection pool if this client created it. */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await Promise.all([this.#dispatcher.close(), this.#streams?.close()]);
  }

  /** The text with the key taken out (servers sometimes echo it). */
  redact(text: string): string {
    return text.split(this.#apiKey).join(REDACTED);
  }

  #count(endpoint: string, field: keyof EndpointStats): void {
    let entry = this.#stats.get(endpoint);
    if (entry === undefined) {
      entry = { calls: 0, failures: 0 };
      this.#stats.set(endpoint, entry);
    }
    entry[field] += 1;
  }
}

function parseBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UserError('api_base_url_invalid', `image API base URL is not a URL: "${baseUrl}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UserError('api_base_url_invalid', `image API base URL must be http(s): "${baseUrl}"`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new UserError('api_base_url_invalid', 'image API base URL must not contain credentials');
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  url.search = '';
  url.hash = '';
  return url;
}
